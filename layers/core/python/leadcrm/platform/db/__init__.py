"""Database access: the engine for Aurora, the unit of work, the shared MetaData and the Alembic migrations."""
