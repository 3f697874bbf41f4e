"""Requests without a terminal: the ``backfill_request`` job (launched from the Launchpad, its typed config is a
request), the ``backfill_clear`` job (Airflow's clear: a Dagster asset selection over days, made a request) and the
``backfill_report`` job (a request's reconcile report as Markdown in the UI).

``backfill_request`` is an adapter of the service (``backfill_assets.service.Backfills``), as ``request create``
is: the same validation, dry run and create, its requests recorded as made from the Launchpad. Bad input fails
the run with the same one-line message and writes nothing; ``dry_run: true`` shows the plan and writes nothing;
otherwise the frozen request is created and the driver sensor carries it out. ``backfill_clear`` is the same
adapter over ``Backfills.clear``, a dry run unless ``dry_run: false``. ``launchpad.py`` builds the three, with its
asking user and its one error policy. Besides the fields the UI shows (the plan and the report as Markdown), each
run's metadata holds ``result``: the service's record (the plan, the request created, the clear, the
reconciliation), what the CLI's ``--json`` prints, as the operation jobs' ``result`` is. A run that created a
request, and a report run, are tagged ``backfill/report_of=<request id>``; the request's own runs carry
``backfill/request_id``.
"""


from collections.abc import Sequence
from typing import Any, Optional

import dagster as dg
from pydantic import Field

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.request_input import RequestInput, parse_conf_text
from backfill_assets.integration.launchpad import launchpad_job, result_metadata
from backfill_assets.integration.selection import select_assets
from backfill_assets.integration.ui_markdown import plan_markdown, report_markdown
from backfill_assets.service import Backfills, ClearInput, CreatedRequest, RequestPlan

REQUEST_JOB = "backfill_request"
REPORT_JOB = "backfill_report"
REQUEST_OP = "create_backfill_request"
CLEAR_JOB = "backfill_clear"
CLEAR_OP = "clear_backfill_cells"
REPORT_OP = "report_backfill_request"
# When a report run is launched by itself: a UI backfill's adoption (its effective policy), a request's close.
ADOPTED_STAGE = "adopted"
CLOSED_STAGE = "closed"


class RequestOptionsConfig(dg.Config):
    """What a request made from the Launchpad takes besides its cells: pace, policies, conf, who and why."""

    max_active: Optional[int] = Field(
        default=None, description="Runs of this request executing at once, up to the run queue's lane and team "
        "limits (the result names the one that binds). Default: 1 when an asset runs its days one at a time "
        "(parallel_days=False or depends on the past; more is refused), else 2.")
    order: Optional[str] = Field(
        default=None, description=" | ".join(M.ORDERS) + ". Default: the order the assets declare (a "
        "contradicting one is refused), else forward.")
    # Any: Dagster config has no str-or-int type; parse_partitions_per_run validates it as `request create` does.
    partitions_per_run: Any = Field(
        default=M.AUTO,
        description=f"auto, or K from 1 to {M.MAX_PARTITIONS_PER_RUN}: the most consecutive days of an asset one "
        f"run takes. auto: 1 with a depends-on-past asset or at most {M.AUTO_MIN_INTERVALS_PER_SLOT} days per "
        "max_active slot, else enough days per run to fill every slot.",
    )
    downstream: str = Field(default=M.DownstreamPolicy.NONE.value, description=" | ".join(M.DOWNSTREAM_POLICIES))
    confirm_cascade: bool = Field(default=False, description="Cascade only after `request confirm ID`.")
    allow_side_effects: list[str] = Field(default=[], description="Side-effecting assets this request may run.")
    approved_by: Optional[str] = Field(default=None, description="Who approved the side effects.")
    conf: Optional[str] = Field(default=None, description="Run conf as JSON, as `request create --conf`.")
    reason: str = Field(default="", description="Why this backfill exists.")
    requested_by: Optional[str] = Field(default=None, description="Who asks (default: the UI's user, or launchpad).")
    wait_for_overlap: bool = Field(default=False, description="Wait for overlapping requests instead of failing.")

    def options(self, user: str) -> dict[str, Any]:
        """These fields as the service's input takes them (conf parsed, the asker defaulted to ``user``)."""
        return {**{name: getattr(self, name) for name in RequestOptionsConfig.model_fields},
                "conf": parse_conf_text(self.conf), "requested_by": self.requested_by or user}


class BackfillRequestConfig(RequestOptionsConfig):
    """A backfill request, as ``backfill-assets request create`` takes it."""

    assets: list[str] = Field(description="Asset names, e.g. [order_facts, daily_revenue].")
    from_day: str = Field(description="First business day, YYYY-MM-DD.")
    to_day: str = Field(description="Last business day, inclusive.")
    reprocess: str = Field(default=M.ReprocessPolicy.FAILED.value, description=" | ".join(M.REPROCESS_POLICIES))
    dry_run: bool = Field(default=False, description="Show each cell's decision now; write nothing.")


class BackfillClearConfig(RequestOptionsConfig):
    """Airflow's clear, as ``backfill-assets clear`` takes it: a selection, the days, only failed or every cell."""

    select: str = Field(description="Dagster asset selection: daily_revenue, +daily_revenue (and its parents), "
                                    "order_facts+ (and its children), key:raw_orders or key:order_facts, ...")
    partition_key: Optional[str] = Field(default=None, description="The day to clear, YYYY-MM-DD.")
    past: bool = Field(default=False, description="Also every earlier day, back to the partitions' first day.")
    future: bool = Field(default=False, description="Also every later day, up to the newest complete interval.")
    from_day: Optional[str] = Field(default=None, description="Instead of partition_key: first day of a range.")
    to_day: Optional[str] = Field(default=None, description="Last day of the range, inclusive.")
    only_failed: bool = Field(default=False, description="Only cells whose latest attempt failed.")
    dry_run: bool = Field(default=True, description="Show each cell's decision; write nothing (false: create it).")


class BackfillReportConfig(dg.Config):
    request_id: str = Field(description="The request to report on, e.g. req-20221101-1a2b3c4d or dg-abcdefgh.")


def build_request_job(graph: AssetGraph) -> dg.JobDefinition:
    def create_backfill_request(
        context: dg.OpExecutionContext, config: BackfillRequestConfig, backfills: Backfills, user: str
    ) -> dg.Output:
        asked = request_input(config, user)
        plan = backfills.plan(asked)
        created = None if config.dry_run else backfills.create(asked)
        return outcome_output(context, plan, created)

    return launchpad_job(graph, REQUEST_JOB, REQUEST_OP, BackfillRequestConfig, create_backfill_request,
                         "Create a backfill request from the Launchpad (set dry_run: true to see the plan first).",
                         op_description="Validate and freeze a backfill request.")


def build_clear_job(graph: AssetGraph, assets: Sequence[dg.AssetsDefinition]) -> dg.JobDefinition:
    """``assets``: the code location's assets, the graph a selection resolves in (a run launched in-process has no
    repository to ask)."""
    assets = list(assets)

    def selector(text: str) -> tuple[str, ...]:
        return select_assets(assets, graph, text)

    def clear_backfill_cells(
        context: dg.OpExecutionContext, config: BackfillClearConfig, backfills: Backfills, user: str
    ) -> dg.Output:
        fields = config.model_dump(exclude=set(RequestOptionsConfig.model_fields) | {"dry_run"})
        asked = ClearInput(**fields, **config.options(user))
        planned = backfills.clear(asked, dry_run=True)
        cleared = planned if config.dry_run else backfills.clear(asked)
        context.log.info(f"clear {config.select!r}: {', '.join(planned.assets)}; {planned.first}..{planned.last} "
                         f"({planned.days_asked})")
        return outcome_output(context, planned.plan, cleared.created,  # type: ignore[arg-type]
                              {"selected_assets": ", ".join(planned.assets), "days_asked": planned.days_asked},
                              record=cleared)

    return launchpad_job(graph, CLEAR_JOB, CLEAR_OP, BackfillClearConfig, clear_backfill_cells,
                         "Airflow's clear from the Launchpad: the selected assets' cells over the days, as one request "
                         "(a dry run until dry_run: false).",
                         op_description="Re-run the selected assets' cells over the days.", select_assets=selector)


def outcome_output(
    context: dg.OpExecutionContext, plan: RequestPlan, created: CreatedRequest | None, extra: dict | None = None,
    record: Any = None,
) -> dg.Output:
    """The op's output: the plan (and the request, when one was created) as metadata the Launchpad shows, and
    ``result``, the service's record (``record``, by default the request created, else the plan) as the CLI's
    ``--json`` prints it."""
    metadata: dict[str, Any] = {"dry_run": True}
    title, message = f"Dry run: nothing was written (code version {plan.code_version})", None
    if created is not None:
        request = created.request
        context.instance.add_run_tags(context.run_id, {T.REPORT_OF: request.request_id})
        title = f"Created {request.request_id} ({request.status}), code version {request.code_version}"
        message = request.message
        metadata = {"request_id": request.request_id, "status": str(request.status),
                    "runs": dg.MetadataValue.url(runs_filter_url(request.request_id))}
    context.log.info(title)
    spec = plan.spec
    return dg.Output(None, metadata={
        **metadata, **(extra or {}),
        "cells": len(plan.cells),
        "max_active": spec.effective_max_active,
        "partitions_per_run": spec.partitions_per_run,
        "partitions_per_run_mode": spec.partitions_per_run_text,
        "planned_runs": len(plan.runs),
        "effective_concurrency": plan.concurrency.effective,
        # The run queue limit that holds the request below its max_active, and where to raise it (empty: none).
        "concurrency_bound_by": "; ".join(plan.concurrency.binding),
        "concurrency_raise_in": plan.concurrency.raise_in or "",
        "plan": dg.MetadataValue.md(plan_markdown(title, plan, [*plan.notes(), message])),
        "result": result_metadata(record if record is not None else created or plan),
    })


def request_input(config: BackfillRequestConfig, user: str) -> RequestInput:
    """The Launchpad's config as the service's input (its keys are the service's field names); ``user``: who asks
    when ``requested_by`` names nobody."""
    return RequestInput(
        assets=config.assets, from_day=config.from_day, to_day=config.to_day, reprocess=config.reprocess,
        **config.options(user),
    )


def build_report_job(graph: AssetGraph) -> dg.JobDefinition:
    def report_backfill_request(
        context: dg.OpExecutionContext, config: BackfillReportConfig, backfills: Backfills, user: str
    ) -> dg.Output:
        reconciled = backfills.reconcile(config.request_id)
        report = reconciled.report
        context.instance.add_run_tags(context.run_id, {T.REPORT_OF: config.request_id})
        totals = report.totals.as_dict()
        return dg.Output(
            None,
            metadata={
                "request_id": config.request_id,
                "complete": report.complete,
                **{k: totals[k] for k in ("planned", "published", "rejected", "skipped", "duplicate_publishes", "gaps")
                   if isinstance(totals.get(k), int)},
                # Days the published tables have not switched yet (0: every reader of the tables sees the pointers).
                "table_days_behind": sum(len(t.days_behind) for t in reconciled.tables),
                "runs": dg.MetadataValue.url(runs_filter_url(config.request_id)),
                "report": dg.MetadataValue.md(report_markdown(report)),
                "result": result_metadata(reconciled),
            },
        )

    return launchpad_job(graph, REPORT_JOB, REPORT_OP, BackfillReportConfig, report_backfill_request,
                         "A backfill request's reconcile report, readable in the UI (launched when a request made in "
                         "the UI is adopted and when it closes; launch it for any request with its request_id).",
                         op_description="A request's reconcile report.")


def report_run_request(request_id: str, stage: str) -> dg.RunRequest:
    """The report run a sensor asks for when a request made in the UI is adopted or closes (``stage``; once per
    stage: the run key)."""
    return dg.RunRequest(
        run_key=f"report:{request_id}:{stage}",
        job_name=REPORT_JOB,
        run_config={"ops": {REPORT_OP: {"config": {"request_id": request_id}}}},
        tags={T.REPORT_OF: request_id},
    )


def runs_filter_url(request_id: str) -> str:
    """The UI's runs page filtered to the request's runs (relative to the webserver's root): every run of a
    request carries ``backfill/request_id`` (the run coordinator adds it to a UI backfill's runs). ``view=runs``
    ticks "Show runs within backfills": without it the page lists a UI backfill as one row, and its runs not at
    all, so the filter would show nothing for them."""
    return f"/runs?q%5B0%5D=tag%3A{T.REQUEST_ID}%3D{request_id}&view=runs"

