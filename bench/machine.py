"""The machine a result was measured on: cores, memory, Python and the versions of what was compared."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata

import psutil

from .airflow.venv import VENV

PACKAGES = ("dagster", "dagster-webserver", "pandas", "pyarrow", "sqlalchemy", "psycopg2-binary")


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _airflow_version() -> str | None:
    python = VENV / "bin" / "python"
    if not python.exists():
        return None
    out = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('apache-airflow'))"],
                         capture_output=True, text=True)
    return out.stdout.strip() or None


def _postgres_version() -> str | None:
    try:
        out = subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-tAc", "SHOW server_version"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def describe_machine() -> dict:
    return {
        "nproc": os.cpu_count(),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu": platform.processor() or platform.machine(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in PACKAGES} | {"apache-airflow": _airflow_version()},
        "postgresql": _postgres_version(),
    }
