"""Alembic's scripts, a package so that the import checker reads them too."""
