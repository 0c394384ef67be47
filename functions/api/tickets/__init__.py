"""Routes and schemas of tickets."""
