"""Routes and schemas of qualification."""
