"""Routes and schemas of the directory: the organization's settings and its members."""
