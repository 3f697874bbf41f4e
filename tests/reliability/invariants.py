"""What readers may see, checked the way readers see it: catalog.current, Warehouse.read_verified and `read`."""

from __future__ import annotations

import hashlib
import json

import dagster as dg
import pandas as pd
import sqlalchemy as sa
from upath import UPath

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import log_head, pointers, publish_log, versions
from backfill_assets.engine.store.storage import MANIFEST_FILE

from .envs import RelEnv


def assert_catalog_consistent(catalog: Catalog) -> None:
    """Whole catalog: one pointer per cell, aimed at its only PUBLISHED version; publish_log gapless."""
    with catalog.engine.connect() as conn:
        ptrs = conn.execute(sa.select(pointers)).all()
        published = conn.execute(
            sa.select(versions.c.asset, versions.c.partition_key, versions.c.version_id).where(
                versions.c.state == "PUBLISHED"
            )
        ).all()
        seqs = list(conn.execute(sa.select(publish_log.c.seq).order_by(publish_log.c.seq)).scalars())
        head = conn.execute(sa.select(log_head.c.seq)).scalar_one()
    by_cell: dict[tuple[str, str], list[str]] = {}
    for asset, key, vid in published:
        by_cell.setdefault((asset, key), []).append(vid)
    two = {cell: vids for cell, vids in by_cell.items() if len(vids) > 1}
    assert not two, f"two current versions: {two}"
    pointed = {(p.asset, p.partition_key): p.version_id for p in ptrs}
    assert len(pointed) == len(ptrs), "two pointer rows for one cell"
    assert pointed == {cell: vids[0] for cell, vids in by_cell.items()}, (
        f"pointers {pointed} disagree with PUBLISHED versions {by_cell}"
    )
    assert seqs == list(range(1, len(seqs) + 1)) and head == len(seqs), f"publish_log seqs {seqs}, log_head {head}"


def assert_complete_on_disk(catalog: Catalog, version_id: str) -> None:
    """A version a reader can be pointed at: data file and manifest exist and agree with the catalog row (in a
    folder or an object store: the path is any universal-pathlib URL)."""
    v = catalog.get(version_id)
    data = UPath(v.path)
    assert data.is_file(), f"{version_id}: data file {data} is missing"
    payload = data.read_bytes()
    assert hashlib.sha256(payload).hexdigest() == v.sha256, f"{version_id}: data file differs from the catalog"
    manifest = json.loads((data.parent / MANIFEST_FILE).read_text())
    assert manifest["sha256"] == v.sha256 and manifest["rows"] == v.rows, f"{version_id}: manifest disagrees"


def assert_readers_see(env: RelEnv, asset: str, partition: str, allowed: set[str | None]) -> str | None:
    """Every reader sees the same complete version, and it is one of ``allowed``; returns its id."""
    catalog = env.catalog
    assert_catalog_consistent(catalog)
    current = catalog.current(asset, partition)
    current_id = current.version_id if current else None
    assert current_id in allowed, f"readers see {current_id}, expected one of {sorted(map(str, allowed))}"
    result = env.cli("read", asset, partition, "--format", "json", "--reader", "reliability")
    if current is None:
        assert result.exit_code == 2 and "no published version" in result.output, result.output
        return None
    assert current.state == "PUBLISHED"
    assert_complete_on_disk(catalog, current_id)
    frame = env.warehouse.read_verified(current.path, current.sha256, current.rows)
    assert result.exit_code == 0, f"read CLI: exit {result.exit_code}: {result.output}"
    served = json.loads(result.stdout)
    expected = json.loads(frame.to_json(orient="records", date_format="iso"))
    assert served == expected and len(served) == current.rows, "read CLI served other data than the current version"
    return current_id


def materialized_versions(instance: dg.DagsterInstance, asset: str, partition: str) -> list[str]:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1000
    ).records
    return [str(r.asset_materialization.metadata["version_id"].value) for r in records if r.asset_materialization]


def frame_of(env: RelEnv, version_id: str) -> pd.DataFrame:
    v = env.catalog.get(version_id)
    return env.warehouse.read_verified(v.path, v.sha256, v.rows)
