"""Airflow 3 contender: its own virtualenv (``bench/airflow/.venv``), one DAG, a LocalExecutor on PostgreSQL."""
