"""The Dagster integration: the public API (api.py) and the wiring, by role."""
