"""An operator's override of what the checks decided (Airflow's "mark success / mark failed", and marking a cell
skipped), and a person's registration of a file fixed by hand (checked like any version): the actions, who may be
named as deciding, and how a skip mark reads in a cell's reason."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Mapping

from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.identity import validate_person_name, validate_text


class OverrideAction(StrEnum):
    """One row of ``overrides``: what a person decided about a version or a cell."""

    ACCEPT = "accept"  # a REJECTED version published: its data was checked by hand, or the check was wrong
    REJECT = "reject"  # a PUBLISHED version found bad after the fact: rolled back and marked REJECTED
    SKIP = "skip"  # a cell requests leave alone under --reprocess none|failed (no data, or not to be backfilled)
    UNSKIP = "unskip"  # the skip mark of a cell withdrawn (the mark's row stays: the audit trail keeps both)
    # A file fixed outside the platform put through the asset's checks as a version of its own, on a person's
    # approval: published when they pass, REJECTED when not (the row says who approved it and why either way).
    REGISTER = "register"


SKIP_MARKS = (OverrideAction.SKIP, OverrideAction.UNSKIP)
# The words a cell's reason starts with when a skip mark decided it: reconcile counts those cells by them.
MARKED_SKIPPED = "marked skipped by "
MAX_REASON = 2000
# Who decided: the same shape as a request's --requested-by / --approved-by.


@dataclass(frozen=True)
class Override:
    """One ``overrides`` row: ``version_id`` for accept / reject, None for a cell's skip mark."""

    id: int
    action: OverrideAction
    asset: str
    partition_key: str
    version_id: str | None
    decided_by: str
    reason: str
    at: str
    publish_seq: int | None = None
    # Who the system saw decide (the OS user, Dagster's launching user), beside ``decided_by``, the name stated.
    system_user: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Override":
        return cls(
            id=int(row["id"]),
            action=OverrideAction(row["action"]),
            asset=row["asset"],
            partition_key=row["partition_key"],
            version_id=row["version_id"],
            decided_by=row["decided_by"],
            reason=row["reason"],
            at=row["at"],
            publish_seq=row["publish_seq"],
            system_user=row.get("system_user"),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": str(self.action),
            "asset": self.asset,
            "partition_key": self.partition_key,
            "version_id": self.version_id,
            "by": self.decided_by,
            "reason": self.reason,
            "at": self.at,
            "publish_seq": self.publish_seq,
            "system_user": self.system_user,
        }

    @property
    def summary(self) -> str:
        """One line for a person: ``accepted by ana at …: why``."""
        verb = {
            OverrideAction.ACCEPT: "accepted",
            OverrideAction.REJECT: "rejected after publish",
            OverrideAction.SKIP: "marked skipped",
            OverrideAction.UNSKIP: "skip mark withdrawn",
            OverrideAction.REGISTER: "registered",
        }[self.action]
        return f"{verb} by {self.decided_by} at {self.at}: {self.reason}"


def skip_mark_reason(mark: Override) -> str:
    """A cell's reason when its skip mark decided it (``decide``; reconcile counts it by MARKED_SKIPPED)."""
    return f"{MARKED_SKIPPED}{mark.decided_by}: {mark.reason}"


def validate_person(value: object, what: str) -> str:
    return validate_person_name(value, what, blank_ok=False)


def validate_reason(value: object, what: str = "{reason}") -> str:
    """An override is never silent: a reason is required, one that is not blank and fits the catalog."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidField(what + " is required and must not be blank: say why")
    return validate_text(value.strip(), what, MAX_REASON, line_breaks=True)
