"""Who may decide what, and how long rejected versions are kept: the code location's own policy, declared once in
``backfill_definitions(access=..., cleanup=...)`` and carried by its ``AssetGraph`` to every door (the CLI, the
Launchpad's jobs, a launched run's steps, the sensors), so each checks the same lists.

These lists check *names*: the name a person states (``--approved-by``, ``--by``, a launch tag) against the names
allowed. Dagster OSS has no login, so a name is a claim, not an identity; what the system saw (the OS user, the
launching user when Dagster records one) is stored beside it (``system_user``) so a claim can be questioned later.

- ``approvers``: who may approve side effects (``allow_side_effects`` + ``approved_by``) and overrides (accept,
  reject). Empty: any stated name, as before the list existed.
- ``admins``: who may decide a handoff besides the asset's owners (``gated_asset(owners=[...])``); they also count
  as approvers when ``approvers`` is set.
- ``CleanupPolicy.retention_days``: how long a rejected, superseded, rolled-back or abandoned version's files are
  kept before the gc sensor (or ``gc`` without ``--older-than``) reclaims them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from backfill_assets.engine.model.errors import InvalidInput, NotAuthorized, quoted
from backfill_assets.engine.model.identity import validate_person_name

DEFAULT_RETENTION_DAYS = 30
MAX_RETENTION_DAYS = 3650


def _names(values: object, what: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidInput(f"{what} must be a list of names, not {quoted(values)}")
    return tuple(validate_person_name(v, f"{what} entry", blank_ok=False).strip() for v in values)


def same_name(a: str, b: str) -> bool:
    """Names compare without case and surrounding spaces (``Ana@example.com`` is ``ana@example.com``)."""
    return a.strip().casefold() == b.strip().casefold()


def _listed(name: str, names: Iterable[str]) -> bool:
    return any(same_name(name, n) for n in names)


@dataclass(frozen=True)
class AccessPolicy:
    """``AccessPolicy(approvers=["ana@example.com"], admins=["team:platform"])``; both empty by default."""

    approvers: Sequence[str] = ()
    admins: Sequence[str] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "approvers", _names(self.approvers, "AccessPolicy approvers"))
        object.__setattr__(self, "admins", _names(self.admins, "AccessPolicy admins"))

    @property
    def checks_approvers(self) -> bool:
        return bool(self.approvers)

    def require_approver(self, name: str, what: str) -> None:
        """Refuse ``name`` as the approver of ``what`` unless it is an approver or admin (no list: anyone)."""
        if not self._approves(name):
            raise NotAuthorized(f"{quoted(name)} may not approve {what}: approvers are "
                                f"{_listing(self.approvers, self.admins)}; nothing changed")

    def may_approve(self, name: str | None) -> bool:
        return bool(name) and self._approves(name or "")

    def _approves(self, name: str) -> bool:
        return not self.approvers or _listed(name, (*self.approvers, *self.admins))

    def require_decider(self, name: str, asset: str, owners: Sequence[str], what: str) -> None:
        """Refuse ``name`` deciding ``what`` about ``asset`` unless it is one of the asset's owners or an admin.
        An asset without owners, in a code location without admins, keeps the old rule: anyone."""
        if not owners and not self.admins:
            return
        if _listed(name, (*owners, *self.admins)):
            return
        raise NotAuthorized(f"{quoted(name)} may not decide {what}: only {asset}'s owners or an admin may "
                            f"({_listing(owners, self.admins)}); nothing changed")


def _listing(names: Sequence[str], admins: Sequence[str]) -> str:
    shown = ", ".join(names) or "none"
    return shown + (f"; admins: {', '.join(admins)}" if admins else "")


@dataclass(frozen=True)
class CleanupPolicy:
    """``CleanupPolicy(retention_days=30)``: files of non-current versions older than this are reclaimed by the gc
    sensor (``backfill_cleanup``, shipped stopped) and by ``gc`` when no ``--older-than`` is given."""

    retention_days: int = DEFAULT_RETENTION_DAYS

    def __post_init__(self) -> None:
        days = self.retention_days
        if isinstance(days, bool) or not isinstance(days, int) or not 0 <= days <= MAX_RETENTION_DAYS:
            raise InvalidInput(f"CleanupPolicy retention_days must be a whole number of days between 0 and "
                               f"{MAX_RETENTION_DAYS}, not {days!r}")


# No lists: every stated name may approve and decide (the behaviour before the lists existed).
OPEN_ACCESS = AccessPolicy()
