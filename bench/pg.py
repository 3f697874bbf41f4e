"""Temporary PostgreSQL databases (``<prefix>_<hex>``), created for one measurement and always dropped."""

from __future__ import annotations

import secrets
from contextlib import contextmanager
from typing import Iterator

import sqlalchemy as sa


@contextmanager
def temporary_database(maintenance_url: str, prefix: str) -> Iterator[str]:
    """Yield the URL of a new empty database next to ``maintenance_url``'s; drop it (WITH FORCE) afterwards."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = sa.create_engine(maintenance_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(maintenance_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
