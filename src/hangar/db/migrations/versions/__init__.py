"""The migrations, oldest first (Alembic orders them by their revision links)."""
