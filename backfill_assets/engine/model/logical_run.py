"""Attempt or new run: which logical run a Dagster re-execution's computation of an asset belongs to.

An attempt is a technical retry of the same computation; new code or new parameters is a new run. Dagster links
every re-execution to the root of its chain (``root_run_id``) whatever it was given, so the chain alone cannot say
which: the catalog can. Every version records the code version and params digest it was computed with, so a
re-execution compares its own with what the runs it re-executes (its parent, the parent's parent, … the root)
computed for the same asset:

- the same code version and params digest as an earlier version of the chain → another attempt of that version's
  logical run (attempt N+1, and an attempt that already published is reported again, not published twice);
- none matches, but the chain did compute the asset → a new logical run, the re-execution's own Dagster run id,
  attempt 1 — never attempt N+1 of a different computation;
- the chain never computed the asset (the root failed before it) → the root's logical run: nothing computed under
  it differs.

A re-execution that changes the computation is accepted rather than refused: re-executing from a failure with a
corrected config or fixed code is what an operator does, and refusing it would only make them launch the same run
without its link to the chain. What stays forbidden is hiding it: it is a run of its own, and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence


class ComputedVersion(Protocol):
    """What the decision reads of a version the chain wrote (a catalog ``Version`` has all of it). Read-only, so a
    frozen record whose fields are never None satisfies it too."""

    @property
    def logical_run_id(self) -> str | None: ...

    @property
    def code_version(self) -> str | None: ...

    @property
    def params_digest(self) -> str | None: ...


@dataclass(frozen=True)
class LogicalRun:
    """The logical run an asset's computation in a Dagster run belongs to, and why (logged with the step)."""

    logical_run_id: str
    reason: str
    # True when a re-execution departed from what its chain computed: it starts a run of its own.
    changed_computation: bool = False


def logical_run_of(
    own_run_id: str,
    root_run_id: str | None,
    chain_versions: Sequence[ComputedVersion],
    code_version: str,
    params_digest: str,
) -> LogicalRun:
    """The logical run of a computation (``code_version``, ``params_digest``) in Dagster run ``own_run_id``.

    ``chain_versions``: the versions of the same asset (any interval) written by the runs this one re-executes,
    oldest first; empty for a run that is not a re-execution."""
    if not root_run_id or root_run_id == own_run_id:
        return LogicalRun(own_run_id, "a first run (not a re-execution)")
    same = [
        v for v in chain_versions
        if v.code_version == code_version and v.params_digest == params_digest and v.logical_run_id
    ]
    if same:
        run = same[-1].logical_run_id or root_run_id
        return LogicalRun(run, f"a re-execution with the same code version and params as run {run}: a new attempt")
    if not chain_versions:
        return LogicalRun(root_run_id, f"a re-execution of run {root_run_id}, which computed nothing of this asset")
    last = chain_versions[-1]
    return LogicalRun(
        own_run_id,
        f"a new run, not an attempt of run {last.logical_run_id}: {differences(last, code_version, params_digest)}",
        changed_computation=True,
    )


def differences(earlier: ComputedVersion, code_version: str, params_digest: str) -> str:
    """What changed between an earlier computation and this one, in words."""
    changed = []
    if earlier.code_version != code_version:
        changed.append(f"code version {earlier.code_version} → {code_version}")
    if earlier.params_digest != params_digest:
        changed.append(f"params digest {earlier.params_digest} → {params_digest}")
    return "; ".join(changed) or "nothing"
