"""The engine: plain Python, never imports Dagster; knows no example domain."""
