"""Routes and schemas of deals."""
