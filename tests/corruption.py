"""A version's data file damaged between its write and its audits, as a flaky disk or a half-finished copy would
leave it: the step is held at ``after_verifying`` (engine/wap/faults.py) while a thread halves the file the
manifest describes, then released. The file-integrity check must catch it; nothing in the library helps.

And a catalog file made into something that is not a catalog (``CATALOG_DAMAGE``): random bytes, text, damaged
pages, a dropped table, a directory in its place."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa

from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store import db
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.wap.faults import AFTER_VERIFYING, ENV_HOLD

WAIT_SECONDS = 120.0


@contextmanager
def file_halved_before_its_audits(
    catalog_url: str, asset: str, day: str, hold: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[str]]:
    """Around one in-process run of ``asset`` ``day``: yields the list the halved file's path is put in."""
    halved: list[str] = []
    hold.touch()
    monkeypatch.setenv(ENV_HOLD, f"{AFTER_VERIFYING}={hold}")

    def halve_then_release() -> None:
        catalog = Catalog(catalog_url)
        deadline = time.monotonic() + WAIT_SECONDS
        try:
            while time.monotonic() < deadline and not halved:
                verifying = [v for v in catalog.versions_of(asset, day) if v.state == VersionState.VERIFYING.value]
                if verifying:
                    data = Path(verifying[-1].path)
                    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
                    halved.append(str(data))
                time.sleep(0.05)
        finally:
            hold.unlink(missing_ok=True)

    thread = threading.Thread(target=halve_then_release, daemon=True)
    thread.start()
    try:
        yield halved
    finally:
        hold.unlink(missing_ok=True)
        thread.join(WAIT_SECONDS)
        monkeypatch.delenv(ENV_HOLD)


# ---- a catalog that is not one ------------------------------------------------------------------------------------


def _at_head(path: Path) -> None:
    Catalog(f"sqlite:///{path}")
    db.dispose_all()


def _random_bytes(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 40)


def _text(path: Path) -> None:
    path.write_text("catalog backup notes\n" * 50)


def _damaged_pages(path: Path) -> None:
    """Every page after the first (which lists the tables) overwritten: the tables' own pages are garbage."""
    _at_head(path)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:] = bytes([0xA5]) * (len(data) - page)
    path.write_bytes(bytes(data))


def _table_dropped(path: Path) -> None:
    _at_head(path)
    engine = sa.create_engine(f"sqlite:///{path}", poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE pointers")
    engine.dispose()


def _directory(path: Path) -> None:
    path.mkdir()


# How a catalog file stops being a catalog, and what the refusal then says of it.
CATALOG_DAMAGE = {
    "random bytes": (_random_bytes, "is damaged or not a SQLite database"),
    "text": (_text, "is damaged or not a SQLite database"),
    "damaged pages": (_damaged_pages, "is damaged or not a SQLite database"),
    "pointers dropped": (_table_dropped, "lacks its table(s) pointers"),
    "a directory": (_directory, "is a directory"),
}
