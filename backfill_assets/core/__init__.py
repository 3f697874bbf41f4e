"""Domain logic in plain Python. Nothing in this package imports dagster (a test enforces it)."""
