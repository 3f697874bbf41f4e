"""Current-version lookup (``Catalog.current``) against a plain SELECT by primary key, same catalog, same rows.

On PostgreSQL (production) and on the embedded SQLite default, over a catalog of 10,000 versions.
"""

from __future__ import annotations

import random
import time

import sqlalchemy as sa

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.schema import pointers, versions

from ..pg import temporary_database
from ..workspace import Workspace
from . import synth
from .stats import latency, ratio

LOOKUPS = 2000
ASSETS = ["order_facts", "daily_revenue"]


def _measure(url: str) -> dict:
    catalog = Catalog(url)
    made = synth.request_with_versions(catalog, "req-20260101-10a10a10", ASSETS, 2500)
    with catalog.engine.connect() as conn:
        cells = [(r.asset, r.partition_key, r.version_id) for r in conn.execute(sa.select(pointers)).all()]
    rng = random.Random(7)
    sample = [rng.choice(cells) for _ in range(LOOKUPS)]
    current, plain = [], []
    for asset, key, version_id in sample:
        began = time.perf_counter()
        catalog.current(asset, key)
        current.append(time.perf_counter() - began)
        began = time.perf_counter()
        with catalog.engine.connect() as conn:
            conn.execute(sa.select(versions).where(versions.c.version_id == version_id)).first()
        plain.append(time.perf_counter() - began)
    cur, base = latency(current), latency(plain)
    return {"versions": made.versions, "current": cur, "baseline_select_by_pk": base,
            "p50_ratio": ratio(cur, base, "p50_ms"), "p99_ratio": ratio(cur, base, "p99_ms")}


def run(pg_url: str, ws: Workspace) -> dict:
    out = {"sqlite": _measure(f"sqlite:///{ws.dir('micro') / 'lookup.db'}")}
    with temporary_database(pg_url, "bench_lookup") as url:
        out["postgresql"] = _measure(url)
        dispose_all()
    return out
