"""Creating ``bench/airflow/.venv`` when it is missing: Airflow 3 must not share the project's virtualenv.

Plain pip, no constraints file (Airflow's constraints are not in the package registry). ``sqlalchemy<2.1`` and
psycopg2 2.9 for the same reasons as in the project (see DAGSTER_NOTES.md); asyncpg because Airflow 3 also opens
an async engine on a ``postgresql`` metadata URL; pandas/pyarrow for the transforms.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

VENV = Path(__file__).resolve().parent / ".venv"
PACKAGES = ("apache-airflow", "psycopg2-binary>=2.9,<3", "asyncpg", "pandas", "pyarrow", "sqlalchemy>=2.0,<2.1")
READY_MARKER = VENV / ".bench-installed"


def airflow_bin(name: str = "airflow") -> Path:
    return VENV / "bin" / name


def ensure_venv(python: str = sys.executable, log=print) -> Path:
    """The virtualenv, created and filled on first use (a few minutes); later calls return at once.

    The marker records the package list, so changing ``PACKAGES`` installs again."""
    wanted = "\n".join(PACKAGES) + "\n"
    if READY_MARKER.exists() and READY_MARKER.read_text() == wanted:
        return VENV
    if not (VENV / "bin" / "python").exists():
        log(f"creating {VENV} (Airflow's own virtualenv)")
        subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    log(f"pip install {' '.join(PACKAGES)} into {VENV}")
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *PACKAGES], check=True)
    READY_MARKER.write_text(wanted)
    return VENV


if __name__ == "__main__":
    ensure_venv()
