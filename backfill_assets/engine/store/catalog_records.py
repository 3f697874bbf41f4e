"""Row types of the catalog: a version, a consumer of a version, a pointer move."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

_JSON_COLUMNS = ("stats_json", "checks_json", "input_versions_json", "params_json")


@dataclass(frozen=True)
class Version:
    """One row of ``versions`` with its JSON columns decoded; the column ``run_id`` is ``logical_run_id`` here
    (the run a retry belongs to; ``dagster_run_id`` is the attempt's Dagster run)."""

    data: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.data[name]
        except KeyError as exc:
            raise AttributeError(name) from exc

    @classmethod
    def from_row(cls, row: sa.Row) -> "Version":
        return cls.from_mapping(row._mapping)

    @classmethod
    def from_mapping(cls, mapping: Any) -> "Version":
        data = dict(mapping)
        if "run_id" in data:
            data["logical_run_id"] = data.pop("run_id")
        for col in _JSON_COLUMNS:
            raw = data.get(col)
            data[col.removesuffix("_json")] = json.loads(raw) if raw else None
            data.pop(col, None)
        return cls(data)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.data)


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
