"""Routes and schemas of analytics."""
