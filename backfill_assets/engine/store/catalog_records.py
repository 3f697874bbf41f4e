"""Row types of the catalog: a version, a consumer of a version, a pointer move."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from operator import itemgetter
from typing import Any, Mapping, Sequence

import sqlalchemy as sa

from backfill_assets.engine.model.json_records import JsonRecord

_JSON_COLUMNS = ("stats_json", "checks_json", "input_versions_json", "params_json")


@dataclass(frozen=True, kw_only=True)
class Version(JsonRecord):
    """One row of ``versions`` with its JSON columns decoded; the column ``run_id`` is ``logical_run_id`` here
    (the run a retry belongs to; ``dagster_run_id`` is the attempt's Dagster run). The columns the table declares
    NOT NULL are required (keyword-only: a version is only ever built from a row); times are ISO-8601 strings."""

    version_id: str
    asset: str
    partition_key: str
    interval_start: str
    interval_end: str
    logical_run_id: str
    dagster_run_id: str
    attempt_no: int
    request_id: str | None = None
    lane: str | None = None
    code_version: str
    params_digest: str
    state: str
    path: str | None = None
    rows: int | None = None
    sha256: str | None = None
    stats: dict[str, Any] | None = None
    checks: list[dict[str, Any]] | None = None
    input_versions: dict[str, Any] | None = None
    source_fingerprint: str | None = None
    expected_previous_version_id: str | None = None
    error: str | None = None
    requested_at: str | None = None
    started_at: str
    ended_at: str | None = None
    published_at: str | None = None
    created_at: str
    worker: str | None = None  # the process that wrote the attempt (RunIdentity.worker)
    params: dict[str, Any] | None = None  # what params_digest digests
    manifest_sha256: str | None = None  # sha256 of its _manifest.json as written (None: written before it was kept)

    @classmethod
    def from_row(cls, row: sa.Row[Any]) -> "Version":
        return cls.from_mapping(row._asdict())

    @classmethod
    def from_rows(cls, rows: Sequence[sa.Row[Any]]) -> list["Version"]:
        """``from_row`` of each row of one result, what its columns become worked out once: a row's ``_asdict``
        asks the result for its names again, and ``from_mapping`` renames and filters each row's (together about
        half of parsing a ten-year request's 10,950 versions)."""
        if not rows:
            return []
        # What ``from_mapping`` works out per row, worked out once: each kept column's index and field name.
        kept = [(n, _FIELD_OF_COLUMN.get(name, name)) for n, name in enumerate(rows[0]._fields)
                if _FIELD_OF_COLUMN.get(name, name) in _FIELDS]
        pick, fields_ = itemgetter(*(n for n, _ in kept)), tuple(name for _, name in kept)
        decoded = [name for name in fields_ if name in _DECODED]
        # Every field given by the row (a whole ``versions`` row): the record's fields set as they are, without the
        # frozen dataclass's ``__init__``, which sets each of 30 fields through ``object.__setattr__`` (most of
        # building a version: 16 µs of ~20 here, 0.18 s of a ten-year request's 10,950). A narrower row takes
        # ``__init__`` and its defaults.
        whole = len(fields_) == len(_FIELDS) and cls is Version
        versions: list[Version] = []
        for row in rows:
            data: dict[str, Any] = dict(zip(fields_, pick(row), strict=True))
            for name in decoded:
                raw = data[name]
                data[name] = json.loads(raw) if raw else None
            if whole:
                version = object.__new__(cls)
                version.__dict__.update(data)
                versions.append(version)
            else:
                versions.append(cls(**data))
        return versions

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> "Version":
        data = dict(mapping)
        if "run_id" in data:
            data["logical_run_id"] = data.pop("run_id")
        for col in _JSON_COLUMNS:
            raw = data.pop(col, None)
            data[col.removesuffix("_json")] = json.loads(raw) if raw else None
        return cls(**{k: v for k, v in data.items() if k in _FIELDS})


_FIELDS = frozenset(f.name for f in fields(Version))
# A column's field when the names differ: ``run_id`` is ``logical_run_id``, a JSON column its decoded field.
_FIELD_OF_COLUMN = {"run_id": "logical_run_id", **{col: col.removesuffix("_json") for col in _JSON_COLUMNS}}
_DECODED = frozenset(col.removesuffix("_json") for col in _JSON_COLUMNS)


@dataclass(frozen=True)
class PublishedHead:
    """A version that was published at some point, as a cell's decision now reads it (``decisions_now``): its id,
    cell, state now and when it was published, without parsing its JSON columns."""

    version_id: str
    asset: str
    partition_key: str
    state: str
    published_at: str | None


@dataclass(frozen=True)
class VersionRun:
    """A version's day, the Dagster run that wrote it and whether it was ever published: what reconcile asks of
    Dagster about it, read without parsing the version's JSON columns."""

    version_id: str
    asset: str
    partition_key: str
    dagster_run_id: str
    published: bool


@dataclass(frozen=True)
class VersionOutcome:
    """How a Dagster run's version of a cell ended (its state, and the error it ended with): what a driver tick
    settles the cell with, read without parsing the version's JSON columns."""

    asset: str
    partition_key: str
    dagster_run_id: str
    state: str
    error: str | None


@dataclass(frozen=True)
class Consumer:
    consumer: str
    consumer_version_id: str | None
    consumer_run_id: str | None
    request_id: str | None
    state: str | None
    at: str


@dataclass(frozen=True)
class PointerMove:
    """Result of a publish or rollback: where the pointer went, from where, and the log entry."""

    seq: int
    asset: str
    partition_key: str
    version_id: str
    previous_version_id: str | None
    action: str
    consumers_of_previous: list[Consumer] = field(default_factory=list)
    # The moved-to version as committed (publish): callers need no catalog round trip after the commit.
    version: Version | None = None
