"""An external engine's ids recorded with the version they computed (``schema.engine_refs``): a subprocess, a
Kubernetes pod, a Spark application reports its own id (``RunContext.report_engine_id``), and ``trace`` finds the
version from it. Rows are only added; the same id reported twice for one version is one row."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa

from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.identity import parse_version_id, validate_text
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.run_context import K8S_DIGEST_CHARS, version_id_of_label, version_label
from backfill_assets.engine.store.catalog import Catalog, Version
from backfill_assets.engine.store.schema import engine_refs, versions
from backfill_assets.engine.store.transactions import begin, read

ENGINE_MAX = 64
ENGINE_ID_MAX = 255


@dataclass(frozen=True)
class EngineRef(JsonRecord):
    """One engine id of a version: ``engine`` says what kind (``subprocess``, ``kubernetes_pod``, …)."""

    version_id: str
    engine: str
    engine_id: str
    at: str


def validate_engine_id(value: object, what: str = "engine id") -> str:
    """An engine id or kind: one line of 1-255 printable characters (stored and printed as given)."""
    text = validate_text(value, what, ENGINE_ID_MAX)
    if not text.strip():
        raise InvalidField(what + " is empty")
    return text


class EngineRefs:
    def __init__(self, catalog: Catalog):
        self.engine = catalog.engine
        self.reader = catalog.reader

    def record(self, version_id: str, engine: str, engine_id: str) -> EngineRef:
        parse_version_id(version_id)
        kind = validate_engine_id(engine, "engine")[:ENGINE_MAX]
        ref = EngineRef(version_id, kind, validate_engine_id(engine_id), iso(utc_now()) or "")
        with begin(self.engine) as conn:
            seen = conn.execute(sa.select(engine_refs.c.id).where(
                engine_refs.c.version_id == version_id, engine_refs.c.engine == kind,
                engine_refs.c.engine_id == ref.engine_id,
            )).first()
            if seen is None:
                conn.execute(engine_refs.insert().values(**asdict(ref)))
        return ref

    def of_versions(self, version_ids: list[str]) -> dict[str, list[EngineRef]]:
        """Each version's engine ids, oldest first."""
        found: dict[str, list[EngineRef]] = {v: [] for v in version_ids}
        for start in range(0, len(version_ids), 500):
            for ref in self._select(engine_refs.c.version_id.in_(version_ids[start:start + 500])):
                found[ref.version_id].append(ref)
        return found

    def with_id(self, engine_id: str) -> list[EngineRef]:
        """Every version an engine id was reported for, oldest first."""
        return self._select(engine_refs.c.engine_id == engine_id)

    def _select(self, where: Any) -> list[EngineRef]:
        query = sa.select(engine_refs).where(where).order_by(engine_refs.c.id)
        with read(self.reader, self.engine) as conn:
            rows = conn.execute(query).all()
        return [EngineRef(r.version_id, r.engine, r.engine_id, r.at) for r in rows]


def versions_with_label(catalog: Catalog, label: str) -> list[Version]:
    """The version whose ``version_label`` (a pod's ``backfill-assets.io/version-id``) is ``label``: read back
    when it was not shortened, else looked up by what its readable head keeps (the asset, the day, the run id's
    start) and confirmed by computing each candidate's label. Empty when none has it."""
    whole = version_id_of_label(label)
    if whole is not None:
        return catalog.versions_by_id([whole])
    head, dash, digest = label.rpartition("-")
    if not dash or len(digest) != K8S_DIGEST_CHARS or not head:
        return []
    asset, dot, rest = head.partition(".")
    day, dot_after_day, run_start = rest.partition(".")
    criteria: list[sa.ColumnElement[bool]]
    if not dot:  # the asset name alone filled the head
        criteria = [versions.c.asset.like(_escaped(asset) + "%", escape="\\")]
    elif not dot_after_day:
        criteria = [versions.c.asset == asset, versions.c.partition_key.like(_escaped(day) + "%", escape="\\")]
    else:
        criteria = [versions.c.asset == asset, versions.c.partition_key == day,
                    versions.c.run_id.like(_escaped(run_start) + "%", escape="\\")]
    return [v for v in catalog.versions_where(*criteria) if version_label(v.version_id) == label]


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
