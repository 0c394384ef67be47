"""Routes and schemas of conversations."""
