"""A request as the ledger holds it (one ``requests`` row): its frozen spec and where it stands."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from backfill_assets.engine.model import request_model as M


@dataclass(frozen=True)
class RequestRecord:
    row: dict[str, Any]

    def _text(self, column: str) -> str:
        value: str = self.row[column]  # a NOT NULL text column
        return value

    def _optional_text(self, column: str) -> str | None:
        value: str | None = self.row.get(column)
        return value

    @property
    def request_id(self) -> str:
        return self._text("request_id")

    @property
    def status(self) -> str:
        return self._text("status")

    @property
    def source(self) -> str:
        return self._text("source")

    @property
    def code_version(self) -> str:
        """The code version frozen at creation: a run of other code may not publish for the request."""
        return self._text("code_version")

    @property
    def message(self) -> str | None:
        return self._optional_text("message")

    @property
    def requested_at(self) -> str:
        return self._text("requested_at")

    @property
    def confirmed_at(self) -> str | None:
        return self._optional_text("confirmed_at")

    @property
    def closed_at(self) -> str | None:
        return self._optional_text("closed_at")

    @cached_property
    def spec(self) -> M.RequestSpec:
        # Cached: decoding a long frozen partition list on every access dominated propagation bursts.
        r = self.row
        per_run_mode, per_run_reason = M.parse_per_run_text(r.get("partitions_per_run_mode"))
        return M.RequestSpec(
            assets=tuple(json.loads(r["assets_json"])),
            partitions=tuple(json.loads(r["partitions_json"])),
            reprocess=r["reprocess"],
            max_active=r["max_active"],
            order=r["order"],
            downstream=r["downstream"],
            confirm_cascade=bool(r["confirm_cascade"]),
            allow_side_effects=tuple(json.loads(r["side_effects_json"])),
            approved_by=r["approved_by"],
            conf=json.loads(r["conf_json"]),
            reason=r["reason"],
            requested_by=r["requested_by"],
            system_user=r.get("system_user"),
            partitions_per_run=r.get("partitions_per_run") or 1,
            partitions_per_run_mode=per_run_mode,
            partitions_per_run_reason=per_run_reason,
            only_failed=bool(r.get("only_failed")),
            serial=bool(r.get("serial")),
            wait_for_overlap=bool(r.get("wait_for_overlap")),
        )

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.row.items() if not k.endswith("_json")}
        out.update(
            assets=json.loads(self.row["assets_json"]),
            partitions=json.loads(self.row["partitions_json"]),
            conf=json.loads(self.row["conf_json"]),
            allow_side_effects=json.loads(self.row["side_effects_json"]),
        )
        return out
