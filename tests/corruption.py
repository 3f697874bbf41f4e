"""A version's data file damaged between its write and its audits, as a flaky disk or a half-finished copy would
leave it: the step is held at ``after_verifying`` (engine/wap/faults.py) while a thread halves the file the
manifest describes, then released. The file-integrity check must catch it; nothing in the library helps."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from backfill_assets.engine.model.states import VersionState
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
