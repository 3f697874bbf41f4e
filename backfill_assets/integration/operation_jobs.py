"""Every operation on a request or a version as a Launchpad job, so people who work in Dagster's UI, and scripts
that drive Dagster through its GraphQL API (``dagster_graphql.DagsterGraphQLClient.submit_job_execution``), can do
what the CLI does: cancel, pause, resume, confirm, rollback, accept, reject, register, skip, handoff decisions, gc,
list.

Each job is an adapter of the service (``backfill_assets.service.Backfills``), like its CLI command: its config keys
are the service's field names, so a bad value fails the run with the service's own one-line message, and nothing
is written. Who acts, when the config names nobody, is the UI's user (the run's ``dagster/user`` tag) or
``launchpad``; ``launchpad.py`` builds every Launchpad job, with that user and its one error policy. The result
is the run's output metadata: ``result`` (the service's record as JSON) and a summary.
An operation whose result is a refusal of the data (a registered file its checks rejected) fails the run with that
summary, its result in the failure's metadata.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import dagster as dg
from pydantic import Field

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.integration.launchpad import launchpad_job, result_metadata
from backfill_assets.service import Backfills
from backfill_assets.service.registering import register_resources


class RequestIdConfig(dg.Config):
    request_id: str = Field(description="The request, e.g. req-20221101-1a2b3c4d.")


class CancelConfig(RequestIdConfig):
    terminate_timeout: Optional[float] = Field(
        default=None, description="Seconds a run's code server gets to answer the termination (default 5).")


class PauseConfig(RequestIdConfig):
    reason: str = Field(default="", description="Why it is paused (shown by list, show and reconcile).")
    by: Optional[str] = Field(default=None, description="Who pauses it (default: the UI's user).")


class ResumeConfig(RequestIdConfig):
    by: Optional[str] = Field(default=None, description="Who resumes it (default: the UI's user).")


class PointerMoveConfig(dg.Config):
    """A day's pointer moved by a person (rollback, reject): which day, why, and whether its readers re-run."""

    asset: str = Field(description="The asset, e.g. daily_revenue.")
    partition_key: str = Field(description="The day, YYYY-MM-DD.")
    reason: str = Field(description="Why (what is wrong with the version serving now); recorded with the move.")
    cascade: bool = Field(default=False, description="Create a request re-running every reader of the bad version.")


class RollbackConfig(PointerMoveConfig):
    to_version: Optional[str] = Field(default=None, description="Version to restore (default: the previous one).")
    by: Optional[str] = Field(default=None, description="Who rolls back: an approver (default: the UI's user).")


class AcceptConfig(dg.Config):
    version_id: str = Field(description="The REJECTED version to publish on a person's word.")
    approved_by: str = Field(description="Who checked the data and answers for it.")
    reason: str = Field(description="Why the rejection was wrong; recorded with the override.")
    cascade: bool = Field(default=False, description="Create a request re-running the replaced version's readers.")


class RegisterConfig(dg.Config):
    asset: str = Field(description="The asset, e.g. daily_revenue.")
    partition_key: str = Field(description="The day, YYYY-MM-DD.")
    path: str = Field(description="The Parquet file fixed outside the platform, on the machine the run executes on; "
                                   "it is copied into the warehouse, never referenced.")
    approved_by: str = Field(description="Who checked the file and answers for it (an approver).")
    reason: str = Field(description="What was fixed and why; recorded with the registration.")
    cascade: bool = Field(default=False, description="Create a request re-running the replaced version's readers.")


class RejectConfig(PointerMoveConfig):
    by: Optional[str] = Field(default=None, description="Who rejects (default: the UI's user).")


class SkipConfig(dg.Config):
    asset: str = Field(description="The asset whose cells are left alone.")
    reason: str = Field(description="Why the cells are left alone; recorded with the mark.")
    partition_key: Optional[str] = Field(default=None, description="One day, or from_day..to_day instead.")
    from_day: Optional[str] = Field(default=None, description="First day of a range.")
    to_day: Optional[str] = Field(default=None, description="Last day of the range, inclusive.")
    by: Optional[str] = Field(default=None, description="Who marks (default: the UI's user).")
    undo: bool = Field(default=False, description="Withdraw the marks instead.")


class HandoffConfig(dg.Config):
    handoff_id: str = Field(description="The handoff, e.g. ho-1a2b3c4d.")
    decision: str = Field(description="accept (re-run the asset's days under the request) | decline.")
    by: Optional[str] = Field(default=None, description="The downstream owner deciding (default: the UI's user).")


class GcConfig(dg.Config):
    older_than_days: Optional[int] = Field(
        default=None, description="Days of retention (default: the code location's CleanupPolicy).")
    dry_run: bool = Field(default=True, description="List what would be removed; remove nothing.")


class ListConfig(dg.Config):
    status: list[str] = Field(default=[], description="Only requests in these statuses (waiting, open, blocked, "
                              "paused, completed, failed, cancelled) or groups (active, closed); none: every request.")


@dataclass(frozen=True)
class Operation:
    """One operation as a job: its name, config, the service call and the line that sums its result up."""

    job: str
    config: type
    call: Callable[[Backfills, Any, str], Any]
    summary: Callable[[Any], str]
    description: str
    # The code location's resources the call needs (opened by Dagster for the run), from its asset graph.
    resources: Callable[[AssetGraph], frozenset[str]] = lambda graph: frozenset()
    # Why the result fails the run although the call returned (a file its checks rejected), or None.
    failure: Callable[[Any], Optional[str]] = lambda result: None


def _handoff(backfills: Backfills, c: HandoffConfig, user: str) -> Any:
    decide = {"accept": backfills.accept_handoff, "decline": backfills.decline_handoff}.get(c.decision)
    if decide is None:
        raise InvalidField("{decision} {value!r} is not one of accept, decline", value=c.decision)
    return decide(c.handoff_id, c.by or user)


OPERATIONS = (
    Operation("backfill_cancel", CancelConfig, lambda b, c, u: b.cancel(c.request_id, c.terminate_timeout),
              lambda r: f"cancelled {r.request_id}; terminated {len(r.terminated_runs)} run(s)",
              "Cancel a request: stop submitting and stop its queued and running runs (safe to repeat)."),
    Operation("backfill_pause", PauseConfig, lambda b, c, u: b.pause(c.request_id, c.by or u, c.reason),
              lambda r: f"{r.request_id} paused; {r.in_flight} cell(s) in flight finish",
              "Pause a request: submit nothing new; runs in flight finish and are recorded."),
    Operation("backfill_resume", ResumeConfig, lambda b, c, u: b.resume(c.request_id, c.by or u),
              lambda r: f"resumed {r.request_id} ({r.status})", "Resume a paused request where it stopped."),
    Operation("backfill_confirm", RequestIdConfig, lambda b, c, u: b.confirm(c.request_id),
              lambda r: f"confirmed {r.request_id}", "Confirm a request's downstream cascade."),
    Operation("backfill_rollback", RollbackConfig,
              lambda b, c, u: b.rollback(c.asset, c.partition_key, c.reason, c.to_version, c.cascade, c.by or u),
              lambda r: f"rolled back {r.taken_off}; serving {r.serving}",
              "Move a day's pointer back to a verified version; lists everyone who read the bad one."),
    Operation("backfill_accept", AcceptConfig,
              lambda b, c, u: b.accept(c.version_id, c.approved_by, c.reason, c.cascade),
              lambda r: f"accepted {r.serving}; replaced {r.taken_off or 'nothing'}",
              "Publish a REJECTED version on a person's word (mark success), recorded as an override."),
    Operation("backfill_register", RegisterConfig,
              lambda b, c, u: b.register(c.asset, c.partition_key, c.path, c.approved_by, c.reason, c.cascade),
              lambda r: r.summary(),
              "Register a day's data fixed outside the platform: published only if the asset's checks pass.",
              resources=register_resources,
              failure=lambda r: None if r.published else r.summary()),
    Operation("backfill_reject", RejectConfig,
              lambda b, c, u: b.reject(c.asset, c.partition_key, c.by or u, c.reason, c.cascade),
              lambda r: f"rejected {r.taken_off}; serving {r.serving}",
              "Reject the current version after the fact (mark failed): the previous verified one serves."),
    Operation("backfill_skip", SkipConfig,
              lambda b, c, u: b.skip(c.asset, c.by or u, c.reason, c.partition_key, c.from_day, c.to_day, c.undo),
              lambda r: f"{'unmarked' if r.undone else 'marked skipped'} {len(r.marks)} cell(s) of {r.asset}",
              "Mark cells deliberately skipped (or withdraw the marks)."),
    Operation("backfill_handoff", HandoffConfig, _handoff,
              lambda r: f"{r.handoff.handoff_id} {r.handoff.status}; {r.cells_added} cell(s) added",
              "A downstream owner accepts or declines a handoff."),
    Operation("backfill_gc", GcConfig, lambda b, c, u: b.gc(c.older_than_days, c.dry_run),
              lambda r: f"{len(r)} version(s) past retention", "Purge old non-current versions' files."),
    Operation("backfill_list", ListConfig, lambda b, c, u: b.list(c.status),
              lambda r: f"{len(r)} request(s)", "List requests, newest first, with their progress."),
)


def build_operation_job(graph: AssetGraph, operation: Operation) -> dg.JobDefinition:
    def run(context: dg.OpExecutionContext, config: Any, backfills: Backfills, user: str) -> dg.Output:
        result = operation.call(backfills, config, user)
        request_id = getattr(config, "request_id", None)
        if request_id:
            context.instance.add_run_tags(context.run_id, {T.REPORT_OF: request_id})
        summary = operation.summary(result)
        metadata: dict[str, Any] = {"summary": summary, "result": result_metadata(result)}
        refused = operation.failure(result)
        if refused:
            raise dg.Failure(description=refused, metadata=metadata, allow_retries=False)
        context.log.info(summary)
        return dg.Output(None, metadata=metadata)

    return launchpad_job(graph, operation.job, op_name(operation.job), operation.config, run,
                         operation.description, resources=operation.resources(graph))


def op_name(job: str) -> str:
    """The job's one op (its config goes under ``ops.<op_name>.config``)."""
    return f"{job}_op"


def build_operation_jobs(graph: AssetGraph) -> list[dg.JobDefinition]:
    return [build_operation_job(graph, operation) for operation in OPERATIONS]
