"""Synthetic catalog rows, inserted in bulk (no runs): versions, pointers, publish_log, requests and cells.

Lets the micro-benchmarks build a request with 10,000 versions or 10,000 publish events in seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.identity import make_version_id
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import log_head, pointers, publish_log, request_items, requests, versions

from ..plain import CALENDAR

CHUNK = 2000


def days(n: int, first: str = "2022-09-01") -> list[str]:
    keys = [first]
    while len(keys) < n:
        keys.append(CALENDAR.next_key(keys[-1]))
    return keys


def _insert(conn: sa.Connection, table: sa.Table, rows: list[dict]) -> None:
    for start in range(0, len(rows), CHUNK):
        conn.execute(table.insert(), rows[start : start + CHUNK])


def request_row(request_id: str, assets: list[str], partitions: list[str], downstream: str = "none") -> dict:
    now = iso(utc_now())
    return dict(
        request_id=request_id, status=M.OPEN, assets_json=json.dumps(assets), partitions_json=json.dumps(partitions),
        code_version="bench", reprocess="completed", downstream=downstream, confirm_cascade=False, order="forward",
        max_active=2, partitions_per_run=1, conf_json="{}", side_effects_json="[]", approved_by=None,
        requested_by="bench", reason="synthetic", requested_at=now, source="cli",
    )


@dataclass
class Synthetic:
    request_id: str
    published_ids: set[str]
    versions: int


def request_with_versions(catalog: Catalog, request_id: str, assets: list[str], n_days: int) -> Synthetic:
    """Per (asset, day): a rejected first attempt and a published second run, both of the request; every
    publish logged. 2 assets x 2,500 days = 10,000 versions."""
    keys = days(n_days)
    now = iso(utc_now())
    vrows, prows, lrows, cells, published = [], [], [], [], set()
    seq = 0
    for ordinal, (key, asset) in enumerate((k, a) for k in keys for a in assets):
        interval = CALENDAR.interval(key)
        base = dict(asset=asset, partition_key=key, interval_start=iso(interval.start), interval_end=iso(interval.end),
                    request_id=request_id, lane="backfill", code_version="bench", params_digest="0" * 16,
                    started_at=now, created_at=now, path=f"/synthetic/{asset}/{key}", rows=100, sha256="0" * 64,
                    stats_json=json.dumps({"amount": {"sum": 1.0}}), input_versions_json="{}", attempt_no=1,
                    ended_at=now, error=None, checks_json=None, published_at=None)
        rejected = make_version_id(asset, key, f"r1-{ordinal}", 1)
        good = make_version_id(asset, key, f"r2-{ordinal}", 1)
        vrows.append({**base, "version_id": rejected, "run_id": f"r1-{ordinal}", "dagster_run_id": f"r1-{ordinal}",
                      "state": VersionState.REJECTED.value, "error": "synthetic rejection"})
        vrows.append({**base, "version_id": good, "run_id": f"r2-{ordinal}", "dagster_run_id": f"r2-{ordinal}",
                      "state": VersionState.PUBLISHED.value, "checks_json": "[]", "published_at": now})
        prows.append(dict(asset=asset, partition_key=key, version_id=good, previous_version_id=None, updated_at=now))
        seq += 1
        lrows.append(dict(seq=seq, asset=asset, partition_key=key, version_id=good, previous_version_id=None,
                          action="publish", request_id=request_id, lane="backfill", at=now))
        cells.append(dict(request_id=request_id, asset=asset, partition_key=key, ordinal=ordinal, origin="planned",
                          decision=M.PUBLISHED, run_id=f"r2-{ordinal}", updated_at=now))
        published.add(good)
    with catalog.engine.begin() as conn:
        conn.execute(requests.insert().values(**request_row(request_id, assets, keys)))
        for table, rows in ((versions, vrows), (pointers, prows), (publish_log, lrows), (request_items, cells)):
            _insert(conn, table, rows)
        conn.execute(log_head.update().where(log_head.c.id == 1).values(seq=seq))
    return Synthetic(request_id, published, len(vrows))


def publish_events(catalog: Catalog, request_id: str, asset: str, n: int) -> None:
    """A cascade request over ``n`` days of ``asset`` whose every day was just published (n publish_log rows)."""
    keys = days(n)
    now = iso(utc_now())
    cells = [dict(request_id=request_id, asset=asset, partition_key=k, ordinal=i, origin="planned",
                  decision=M.PUBLISHED, updated_at=now) for i, k in enumerate(keys)]
    log = [dict(seq=i + 1, asset=asset, partition_key=k, version_id=make_version_id(asset, k, f"r-{i}", 1),
                previous_version_id=None, action="publish", request_id=request_id, lane="backfill", at=now)
           for i, k in enumerate(keys)]
    with catalog.engine.begin() as conn:
        conn.execute(requests.insert().values(**request_row(request_id, [asset], keys, downstream="cascade")))
        _insert(conn, request_items, cells)
        _insert(conn, publish_log, log)
        conn.execute(log_head.update().where(log_head.c.id == 1).values(seq=n))


def request_cells(catalog: Catalog, request_id: str, assets: list[str], keys: list[str]) -> None:
    """An open request over ``keys`` x ``assets`` whose every cell is pending: a request just made, no run yet."""
    now = iso(utc_now())
    cells = [dict(request_id=request_id, asset=asset, partition_key=key, ordinal=ordinal, origin="planned",
                  decision=M.PENDING, updated_at=now)
             for ordinal, (key, asset) in enumerate((k, a) for k in keys for a in assets)]
    with catalog.engine.begin() as conn:
        conn.execute(requests.insert().values(**request_row(request_id, assets, keys)))
        _insert(conn, request_items, cells)
