"""Routes and schemas of ingestion."""
