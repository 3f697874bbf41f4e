"""One attempt's stages as OpenLineage run events (plain mapping: no I/O, no Dagster).

Job: one per gated asset (``<namespace>/<asset>``). Run: one per attempt, its ``runId`` a UUID derived from the
version id alone (``run_id_for``), so START and COMPLETE/FAIL share it and anyone holding a version id finds its
run. Parent: the Dagster run doing the attempt, its root the logical run (the retry chain's first run).

    began      → START
    published  → COMPLETE, then OTHER carrying the publish (the pointer moved: backfill_publish)
    rejected   → FAIL,     then OTHER carrying the rejection (the pointer did not move)
    abandoned  → FAIL (the step raised), or ABORT (its run was cancelled, so the publish was refused)

Inputs are the upstream versions read (one dataset per upstream asset, its version id in the ``version`` facet);
the output is the asset's dataset at this attempt's version, with the version's state.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    data_quality_assertions_dataset,
    dataset_version_dataset,
    error_message_run,
    job_type_job,
    lifecycle_state_change_dataset,
    nominal_time_run,
    output_statistics_output_dataset,
    ownership_job,
    parent_run,
    schema_dataset,
    symlinks_dataset,
)

from backfill_assets.engine.model.identity import table_name_of
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Version
from backfill_assets.engine.wap.observer import AttemptEvent, AttemptStage
from backfill_assets.lineage import facets as F

# uuid5 namespace of the runs: the same version id gives the same runId in every process, on every day.
_RUN_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:backfill_assets:version")


def run_id_for(version_id: str) -> str:
    """The OpenLineage runId of the attempt that wrote ``version_id``."""
    return str(uuid.uuid5(_RUN_ID_NAMESPACE, version_id))


def as_uuid(run_id: str) -> str:
    """A Dagster run id as an OpenLineage runId: itself when it is a UUID (Dagster's are), else derived from it."""
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        return str(uuid.uuid5(_RUN_ID_NAMESPACE, f"dagster-run:{run_id}"))


@dataclass(frozen=True)
class LineageNaming:
    """Where jobs and datasets are named: the job namespace, the Dagster job that is the parent, and the
    warehouse's datasource (OpenLineage's naming: ``file`` + absolute path, ``s3://bucket`` + key prefix)."""

    namespace: str
    dagster_job: str
    dataset_namespace: str
    dataset_prefix: str
    # The published tables each asset's days form, as (namespace, schema) pairs: an output names its table as a
    # symlink (OpenLineage's way to give a dataset its table identifier), ``<schema>.<asset>``.
    tables: tuple[tuple[str, str], ...] = ()

    @classmethod
    def for_warehouse(
        cls, namespace: str, dagster_job: str, warehouse_root: str, tables: tuple[tuple[str, str], ...] = ()
    ) -> "LineageNaming":
        parts = urlsplit(str(warehouse_root))
        if parts.scheme in ("", "file"):
            return cls(namespace, dagster_job, "file", os.path.abspath(parts.path or str(warehouse_root)), tables)
        return cls(namespace, dagster_job, f"{parts.scheme}://{parts.netloc}", parts.path.strip("/"), tables)

    def dataset_name(self, asset: str) -> str:
        return f"{self.dataset_prefix.rstrip('/')}/{asset}" if self.dataset_prefix else asset


def attempt_events(event: AttemptEvent, naming: LineageNaming) -> list[RunEvent]:
    """The run events one stage of one attempt stands for, in the order to send them."""
    if event.stage is AttemptStage.BEGAN:
        return [_run_event(event, naming, RunState.START, _time(event.version.started_at))]
    ended = _time(event.version.ended_at)
    if event.stage is AttemptStage.PUBLISHED:
        return [
            _run_event(event, naming, RunState.COMPLETE, ended),
            _run_event(event, naming, RunState.OTHER, _time(event.version.published_at) or ended, decision=True),
        ]
    if event.stage is AttemptStage.REJECTED:
        return [
            _run_event(event, naming, RunState.FAIL, ended),
            _run_event(event, naming, RunState.OTHER, ended, decision=True),
        ]
    return [_run_event(event, naming, RunState.ABORT if event.cancelled else RunState.FAIL, ended)]


def _run_event(
    event: AttemptEvent, naming: LineageNaming, state: RunState, at: str | None, decision: bool = False
) -> RunEvent:
    producer = F.producer()
    run_facets: dict[str, Any] = {
        **_identity_facets(event, naming, producer),
        F.TIMES_FACET: _times(event, producer),
    }
    if state in (RunState.FAIL, RunState.ABORT) and event.error:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=event.error, programmingLanguage="python", producer=producer
        )
    if decision:
        run_facets[F.PUBLISH_FACET] = _decision(event, producer)
    return RunEvent(
        eventType=state,
        eventTime=at or iso(utc_now()),
        run=Run(runId=run_id_for(event.version.version_id), facets=run_facets),
        job=Job(namespace=naming.namespace, name=event.spec.name, facets=_job_facets(event, producer)),
        inputs=[_input(v, naming, producer) for v in event.inputs],
        outputs=[_output(event, naming, producer, decision)],
        producer=producer,
    )


def _identity_facets(event: AttemptEvent, naming: LineageNaming, producer: str) -> dict[str, Any]:
    identity, version = event.identity, event.version
    parent = parent_run.ParentRunFacet(
        run=parent_run.Run(runId=as_uuid(identity.dagster_run_id)),
        job=parent_run.Job(namespace=naming.namespace, name=naming.dagster_job),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=as_uuid(identity.logical_run_id)),
            job=parent_run.RootJob(namespace=naming.namespace, name=naming.dagster_job),
        ),
        producer=producer,
    )
    return {
        F.IDENTITY_FACET: F.BackfillIdentityRunFacet(
            asset=identity.asset,
            partitionKey=identity.partition_key,
            versionId=version.version_id,
            logicalRunId=identity.logical_run_id,
            dagsterRunId=identity.dagster_run_id,
            attemptNo=int(version.attempt_no or 0),
            codeVersion=identity.code_version,
            paramsDigest=identity.params_digest,
            lane=identity.lane,
            requestId=identity.request_id,
            worker=identity.worker or None,
            producer=producer,
        ),
        "nominalTime": nominal_time_run.NominalTimeRunFacet(
            nominalStartTime=iso(identity.interval.start_utc) or "",
            nominalEndTime=iso(identity.interval.end_utc),
            producer=producer,
        ),
        "parent": parent,
    }


def _times(event: AttemptEvent, producer: str) -> F.BackfillTimesRunFacet:
    identity, version = event.identity, event.version
    return F.BackfillTimesRunFacet(
        intervalStart=iso(identity.interval.start_utc) or "",
        intervalEnd=iso(identity.interval.end_utc) or "",
        requestedAt=_time(version.requested_at) or identity.requested_at,
        startedAt=_time(version.started_at) or identity.started_at,
        endedAt=_time(version.ended_at),
        publishedAt=_time(version.published_at),
        producer=producer,
    )


def _decision(event: AttemptEvent, producer: str) -> F.BackfillPublishRunFacet:
    published = event.stage is AttemptStage.PUBLISHED
    return F.BackfillPublishRunFacet(
        decision="published" if published else "rejected",
        versionId=event.version.version_id,
        previousVersionId=event.previous_version_id,
        servingVersionId=event.version.version_id if published else event.serving_version_id,
        failedChecks=event.failed_checks,
        reason=None if published else event.error,
        producer=producer,
    )


def _job_facets(event: AttemptEvent, producer: str) -> dict[str, Any]:
    job_facets: dict[str, Any] = {
        "jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration="DAGSTER", jobType="ASSET", producer=producer
        )
    }
    if event.spec.owners:
        job_facets["ownership"] = ownership_job.OwnershipJobFacet(
            owners=[ownership_job.Owner(name=owner) for owner in event.spec.owners], producer=producer
        )
    return job_facets


def _version_facets(version: Version, producer: str) -> dict[str, Any]:
    return {
        "version": dataset_version_dataset.DatasetVersionDatasetFacet(
            datasetVersion=version.version_id, producer=producer
        ),
        F.VERSION_FACET: F.BackfillVersionDatasetFacet(
            versionId=version.version_id,
            partitionKey=version.partition_key,
            state=(version.state or "").lower(),
            path=version.path,
            rows=version.rows,
            sha256=version.sha256,
            producer=producer,
        ),
    }


def _input(version: Version, naming: LineageNaming, producer: str) -> InputDataset:
    return InputDataset(
        namespace=naming.dataset_namespace,
        name=naming.dataset_name(version.asset),
        facets=_version_facets(version, producer),
    )


def _output(event: AttemptEvent, naming: LineageNaming, producer: str, decision: bool) -> OutputDataset:
    version = event.version
    dataset_facets = _version_facets(version, producer)
    if event.spec.schema:
        dataset_facets["schema"] = schema_dataset.SchemaDatasetFacet(
            fields=[schema_dataset.SchemaDatasetFacetFields(name=n, type=t) for n, t in event.spec.schema.items()],
            producer=producer,
        )
    if event.checks:
        dataset_facets["dataQualityAssertions"] = data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(
            assertions=[
                data_quality_assertions_dataset.Assertion(
                    assertion=c.name, success=c.passed, description=c.description or None, severity="error"
                )
                for c in event.checks
            ],
            producer=producer,
        )
    if decision and event.stage is AttemptStage.PUBLISHED:
        change = lifecycle_state_change_dataset.LifecycleStateChange
        dataset_facets["lifecycleStateChange"] = lifecycle_state_change_dataset.LifecycleStateChangeDatasetFacet(
            lifecycleStateChange=change.OVERWRITE if event.previous_version_id else change.CREATE,
            producer=producer,
        )
    if naming.tables and event.stage is AttemptStage.PUBLISHED:
        dataset_facets["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(
            identifiers=[
                symlinks_dataset.Identifier(
                    namespace=ns, name=f"{schema}.{table_name_of(event.spec.name)}", type="TABLE"
                )
                for ns, schema in naming.tables
            ],
            producer=producer,
        )
    output_facets: dict[str, Any] = {}
    if version.rows is not None:
        output_facets["outputStatistics"] = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=int(version.rows), producer=producer
        )
    return OutputDataset(
        namespace=naming.dataset_namespace,
        name=naming.dataset_name(event.spec.name),
        facets=dataset_facets,
        outputFacets=output_facets,
    )


def _time(value: Any) -> str | None:
    """A stored time (the catalog keeps UTC ISO-8601 text), None when it has not happened."""
    return str(value) if value else None
