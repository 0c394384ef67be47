"""Routes and schemas of work."""
