"""The README's Python example of the service (the block between its ``service-example`` markers, byte for byte),
run as a user runs it: a fresh interpreter on a fresh DAGSTER_HOME. It plans, creates, pauses and resumes a
request and reads a refusal that names its field."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.pauses import Pauses
from tests.homes import fresh_home

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"<!-- service-example:start -->\s*```python\n(.*?)```\s*<!-- service-example:end -->", re.S)


def readme_code() -> str:
    found = BLOCK.search(README.read_text())
    assert found, "README lost its service example"
    return found.group(1)


def test_the_readmes_service_example_runs_as_written(tmp_path, monkeypatch):
    settings = fresh_home(tmp_path / "dagster_home", monkeypatch)
    script = tmp_path / "service_example.py"
    script.write_text(readme_code())
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "partitions per run: 1 (auto: 5 interval(s) over 2 run slot(s) is at most 3 per slot, so one " \
           "interval per run)" in lines
    assert any(line.startswith("planned 5 | published 0 |") and line.endswith("| open") for line in lines), lines
    assert lines[-1].startswith("('to_day',) to_day 2099-01-01 is past the newest complete interval")

    catalog = Catalog(settings.catalog_url)
    [request] = Ledger(catalog).list()
    assert (request.source, request.spec.requested_by, request.spec.reason) == ("python", "ana", "FX fix")
    [pause] = Pauses(catalog).history(request.request_id)
    assert (pause.paused_by, pause.resumed_by) == ("ana", "ana")
    dispose_all()
