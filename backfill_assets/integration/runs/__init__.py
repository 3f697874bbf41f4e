"""Dagster runs: facts about runs, run identity, cancel, in-process runs, the private-API adapter."""
