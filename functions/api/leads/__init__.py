"""Routes and schemas of leads."""
