"""Lost, duplicated and partial publishes of a request (and its follow-ups), counted from the catalog and the
warehouse as readers would find them — on any warehouse root, a folder or S3.

- lost: a cell none of the requests ever published;
- duplicated: a cell the requests published more than once;
- partial: a version a reader can be sent to (the pointer's, or any ever published) whose data object or
  manifest is missing, unreadable or disagrees with the catalog (sha256, rows);
- stuck: an attempt of the requests still WRITING or VERIFYING after its runs ended (invisible, but a gap).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from backfill_assets.engine.model.errors import IntegrityError, StorageError
from backfill_assets.engine.model.states import IN_PROGRESS, VersionState
from backfill_assets.engine.store.schema import pointers, versions


@dataclass(frozen=True)
class PublishCounts:
    lost: int
    duplicated: int
    partial: list[str]  # "version_id: why"
    stuck: list[str]

    def as_tallies(self) -> dict[str, int]:
        return {
            "lost publishes": self.lost,
            "duplicated publishes": self.duplicated,
            "partial publishes": len(self.partial),
            "stuck attempts": len(self.stuck),
        }


def count_publishes(env, request_ids: list[str], cells: list[tuple[str, str]]) -> PublishCounts:
    catalog = env.catalog
    own = [v for request_id in request_ids for v in catalog.versions_of_request(request_id)]
    published = {cell: [v for v in own if (v.asset, v.partition_key) == cell and v.published_at] for cell in cells}
    with catalog.engine.connect() as conn:
        pointed = set(conn.execute(sa.select(pointers.c.version_id)).scalars())
    visible = catalog.versions_where(sa.or_(versions.c.published_at.is_not(None), versions.c.version_id.in_(pointed)))
    return PublishCounts(
        lost=sum(1 for vs in published.values() if not vs),
        duplicated=sum(max(len(vs) - 1, 0) for vs in published.values()),
        partial=[f"{v.version_id}: {why}" for v in visible if (why := _incomplete(env.warehouse, v))],
        stuck=[f"{v.version_id} {v.state}" for v in own if VersionState(v.state) in IN_PROGRESS],
    )


def _incomplete(warehouse, version) -> str | None:
    """Why a visible version cannot be read whole, or None: its bytes hash to the catalog's sha256, its rows are the
    catalog's, and its manifest says the same."""
    if not version.path or not version.sha256:
        return "no data object recorded"
    try:
        frame = warehouse.read_verified(version.path, version.sha256, version.rows)
        manifest = warehouse.read_manifest(version.path)
    except (IntegrityError, StorageError) as exc:
        return str(exc)
    if manifest.get("sha256") != version.sha256 or manifest.get("rows") != len(frame):
        return "manifest disagrees with the catalog"
    return None
