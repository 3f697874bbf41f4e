"""An operator's overrides, checked before anything moves (``backfill-assets accept / reject / skip``).

- **accept** a REJECTED version: only a REJECTED one (an abandoned or in-progress attempt is partial or unchecked;
  a published, superseded or rolled-back one needs no accept), only when its stored file still verifies against
  the catalog's sha256, and only while the pointer is where it was when the version was judged — a version
  published after it is never silently replaced (roll back first, or re-run the day).
- **reject** the current PUBLISHED version: roll back to the previous verified version, whose file must verify,
  and mark the bad one REJECTED. Refused when there is no earlier verified version: the pointer is never removed
  (readers and downstream would find no data, and nothing would re-run the day), so the way out is a re-run.
- **rollback** the current version to an earlier verified one (the previous, or ``--to``), on an approver's word as
  reject is: the version it restores must verify as reject's restore must, checked inside the move's transaction
  so a target that does not verify leaves the pointer where it was.
- **skip** marks cells that requests leave alone under ``--reprocess none`` and ``failed``; ``completed`` re-runs
  them. ``--undo`` withdraws a mark with its own row: the audit trail keeps both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from backfill_assets.engine.model.access import OPEN_ACCESS, AccessPolicy
from backfill_assets.engine.model.errors import IntegrityError, InvalidField, InvalidInput, NotFound, PlanError
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.identity import parse_version_id
from backfill_assets.engine.model.overrides import Override, validate_person, validate_reason
from backfill_assets.engine.model.request_model import MAX_PARTITIONS
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import Catalog, PointerMove, Version
from backfill_assets.engine.store.transactions import atomic

if TYPE_CHECKING:  # the warehouse module imports pandas and pyarrow: only where files are read
    from backfill_assets.engine.store.storage import Warehouse

S = VersionState
# Why a version in each state other than REJECTED cannot be accepted.
NOT_ACCEPTABLE = {
    S.WRITING: "it is still being written: partial data, never checked",
    S.VERIFYING: "its checks have not concluded: its data is partial or unchecked",
    S.ABANDONED: "its attempt was abandoned before its checks concluded: its data is partial or unchecked",
    S.PUBLISHED: "it is already published",
    S.SUPERSEDED: "it passed its checks and was published before; restore it with rollback --to",
    S.ROLLED_BACK: "it passed its checks and was published before; restore it with rollback --to",
    S.PURGED: "its files were purged",
}


def accept(
    catalog: Catalog, warehouse: Warehouse, version_id: str, by: str, reason: str,
    access: AccessPolicy = OPEN_ACCESS, system_user: str | None = None,
) -> tuple[PointerMove, Override]:
    """Publish the REJECTED ``version_id`` on a person's word, by the publish compare-and-swap; ``by`` must be
    an approver of ``access`` (when it lists any)."""
    parse_version_id(version_id)
    by = validate_person(by, "{approved_by}")
    reason = validate_reason(reason)
    access.require_approver(by, f"accepting {version_id}")
    version = catalog.get(version_id)
    state = VersionState(version.state)
    if state is not S.REJECTED:
        raise InvalidInput(
            f"{version_id} is {state.value}: {NOT_ACCEPTABLE[state]}; only a REJECTED version can be accepted"
        )
    _verify(warehouse, version, f"{version_id} cannot be accepted: its stored file does not verify")
    return catalog.accept_version(version_id, by, reason, system_user)


def reject(
    catalog: Catalog, warehouse: Warehouse, asset: str, partition_key: str, by: str, reason: str,
    access: AccessPolicy = OPEN_ACCESS, system_user: str | None = None,
) -> tuple[PointerMove, Override]:
    """Roll the current version back to the previous verified one and mark it REJECTED; ``by`` must be an
    approver of ``access`` (when it lists any)."""
    by = validate_person(by, "{by}")
    reason = validate_reason(reason)
    access.require_approver(by, f"rejecting {asset} {partition_key}")
    bad = catalog.current(asset, partition_key)
    if bad is None:
        raise NotFound(f"{asset} {partition_key} has no published version to reject")
    restore = catalog.rollback_target(asset, partition_key)
    if restore is None:
        raise PlanError(
            f"reject refused: {asset} {partition_key} has no earlier verified version to serve instead of "
            f"{bad.version_id}, and reject never leaves a day without published data; re-run the day "
            "(request create --reprocess completed) to replace it"
        )
    _verify(warehouse, restore, f"reject refused: the version it would restore, {restore.version_id}, does not verify")
    return catalog.reject_current(asset, partition_key, bad.version_id, restore.version_id, by, reason, system_user)


def rollback(
    catalog: Catalog, warehouse: Warehouse, asset: str, partition_key: str, by: str, reason: str,
    to_version: str | None = None, access: AccessPolicy = OPEN_ACCESS,
) -> PointerMove:
    """Move the pointer back to ``to_version`` (default: the previous verified version) and mark the current one
    ROLLED_BACK; ``by`` must be an approver of ``access`` (when it lists any), and the version restored must
    verify (the check ``reject`` makes), else nothing moves."""
    by = validate_person(by, "{by}")
    access.require_approver(by, f"rolling back {asset} {partition_key}")
    with atomic(catalog.engine):
        # The catalog picks the target in the move's transaction; verifying that very version before the commit
        # means no other version can be the one restored.
        move = catalog.rollback(asset, partition_key, reason, to_version)
        _verify(warehouse, catalog.get(move.version_id),
                f"rollback refused: the version it would restore, {move.version_id}, does not verify")
    return move


def skip_cells(
    graph: AssetGraph, asset: str, partition: str | None, first: str | None, last: str | None,
    newest_complete: str | None, undo: bool,
) -> list[tuple[str, str]]:
    """The cells one ``skip`` names: PARTITION, or the days --from..--to (validated, bounded). A mark (not its
    ``undo``) is refused past the ``newest_complete`` interval, as a request is: a day whose data is not all in yet
    cannot be judged not worth computing. Withdrawing a mark is allowed on any day."""
    graph.require(asset)
    calendar = graph.calendar
    if partition is not None:
        if first is not None or last is not None:
            raise InvalidField("give {partition_key} or {from_day}/{to_day}, not both")
        calendar.interval(partition)  # validates the key as a business day
        if not undo:
            _require_complete(partition, "{partition_key}", newest_complete)
        return [(asset, partition)]
    if first is None or last is None:
        raise InvalidField("name the cell: {partition_key}, or {from_day} D {to_day} D for a range")
    if not undo:
        calendar.day_of_key(last)  # a malformed day is named as such before it is compared
        _require_complete(last, "{to_day}", newest_complete)
    days = (calendar.day_of_key(last) - calendar.day_of_key(first)).days + 1
    if days > MAX_PARTITIONS:
        raise InvalidInput(f"the range has {days} days; at most {MAX_PARTITIONS} at once")
    return [(asset, key) for key in calendar.keys_between(first, last)]


def _require_complete(day: str, field: str, newest_complete: str | None) -> None:
    if newest_complete is None or day > newest_complete:
        raise InvalidField(field + " {value} is past the newest complete interval ({newest})", value=day,
                           newest=newest_complete or "none yet")


def skip(
    catalog: Catalog, cells: list[tuple[str, str]], by: str, reason: str, undo: bool = False,
    system_user: str | None = None,
) -> list[Override]:
    """Mark ``cells`` deliberately skipped, or (``undo``) withdraw the marks those of them have."""
    by = validate_person(by, "{by}")
    reason = validate_reason(reason)
    if not undo:
        return catalog.mark_skipped(cells, by, reason, system_user)
    withdrawn = catalog.unmark_skipped(cells, by, reason, system_user)
    if not withdrawn:
        span = cells[0][1] if len(cells) == 1 else f"{cells[0][1]}..{cells[-1][1]}"
        raise InvalidInput(f"{cells[0][0]} {span}: not marked skipped, nothing to undo")
    return withdrawn


def _verify(warehouse: Warehouse, version: Version, refusal: str) -> None:
    if not version.path or not version.sha256:
        raise InvalidInput(f"{refusal} (it has no stored file)")
    try:
        warehouse.read_version(version)  # its manifest and its data file: the one check every reader makes
    except IntegrityError as exc:
        raise InvalidInput(f"{refusal}: {exc}; nothing changed") from exc
