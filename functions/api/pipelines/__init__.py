"""Routes and schemas of pipelines."""
