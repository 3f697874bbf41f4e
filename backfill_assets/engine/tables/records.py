"""What a published table's sync did, and how far a table is behind the pointers (plain records every door prints)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backfill_assets.engine.model.json_records import JsonRecord


@dataclass(frozen=True)
class SyncResult(JsonRecord):
    """One table's sync: the log position it held before and holds now, and the days it switched."""

    kind: str
    table: str
    asset: str
    before_seq: int
    seq: int
    days: tuple[str, ...]
    versions: tuple[str, ...]
    commits: int = 0
    conflicts: int = 0


@dataclass(frozen=True)
class TableLag:
    """How far one table is behind the pointers: the days whose pointer moved after the table's position."""

    kind: str
    table: str
    asset: str
    seq: int
    days_behind: tuple[str, ...]
    error: str | None = None

    @property
    def in_line(self) -> bool:
        return not self.days_behind and self.error is None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "table": self.table, "asset": self.asset, "seq": self.seq,
                "days_behind": list(self.days_behind), "in_line": self.in_line, "error": self.error}
