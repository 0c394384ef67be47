"""Database access: table definitions, the engine for Aurora, the unit of work and the SQL of each area."""
