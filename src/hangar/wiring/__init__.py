"""Process wiring: the service container built from settings, the worker process (webhook
dispatcher and scheduler, with the one list of jobs), and every table in one place (for
Alembic and bulk seeding)."""
