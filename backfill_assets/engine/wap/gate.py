"""Write–audit–publish for one (asset, partition) attempt, in plain Python (docs/ARCHITECTURE.md#gate).

The Dagster step drives it: ``begin`` → ``read_published`` (upstream, recorded) → ``write_and_audit`` →
``conclude`` (publish by CAS when every check passed and the code version is the frozen one, else reject).
A failure anywhere leaves the previously published version current.

``publish_guard``, asked just before the publish CAS, says whether the attempt may still publish at all: a run
that was cancelled while it computed (marked cancelled without its worker's confirmation when its code server
did not answer, so the worker kept going) must not publish afterwards. Its version is abandoned instead.

``before_publish``: what must be ready before a version that passed its checks publishes, such as
``PostgresTables.prepare`` (its rows loaded into their own table, so the publish's own switch only attaches it).
Each is called with the version about to publish; one that fails is logged and the publish goes on (whatever it
prepares is made later by whoever needs it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from backfill_assets.engine.model.errors import BackfillError, NotFound, PublishConflict
from backfill_assets.engine.model.graph import NOT_VERSIONED, DeclaredAsset
from backfill_assets.engine.model.identity import RunIdentity
from backfill_assets.engine.model.states import IN_PROGRESS, VERIFIED, VersionState
from backfill_assets.engine.store.catalog import Catalog, PointerMove, Version
from backfill_assets.engine.store.storage import Warehouse, WrittenVersion
from backfill_assets.engine.wap.audit import CheckOutcome, run_audits
from backfill_assets.engine.wap.faults import AFTER_PUBLISH_COMMIT, AFTER_VERIFYING, fault_point
from backfill_assets.engine.wap.observer import AttemptEvent, AttemptObserver, AttemptStage, notify

log = logging.getLogger(__name__)


class NotPublished(BackfillError):
    """An input the step needs has no published version: downstream waits for published data."""


class PublishRefused(BackfillError):
    """The attempt may not publish any more (its run was cancelled); its version was abandoned."""


@dataclass
class GateOutcome:
    version: Version
    published: bool
    checks: list[CheckOutcome]
    serving_version_id: str | None
    move: PointerMove | None = None
    error: str | None = None
    # Why a backfill launched from Dagster left the cell alone: the outcome then reports the version still serving
    # again (not recomputed, no version created), so Dagster shows the day as what serves it.
    left_alone: str | None = None

    @property
    def failed_checks(self) -> list[str]:
        return [c.name for c in self.checks if not c.passed]


@dataclass
class Gate:
    catalog: Catalog
    warehouse: Warehouse
    spec: DeclaredAsset
    identity: RunIdentity
    frozen_code_version: str | None = None
    # Returns why this attempt must not publish (e.g. its run was cancelled), or None; asked before the CAS.
    publish_guard: Callable[[], str | None] | None = None
    version: Version | None = None
    inputs: list[Version] = field(default_factory=list)
    written: WrittenVersion | None = None
    # Told when the attempt begins and how it ends (lineage); one that fails is logged, never propagated.
    observers: Sequence[AttemptObserver] = ()
    # Called with the version about to publish, once its checks passed (see the module's docstring).
    before_publish: Sequence[Callable[[Version], Any]] = ()

    @property
    def version_id(self) -> str:
        if self.version is None:
            raise BackfillError("gate not started")
        return self.version.version_id

    @property
    def started(self) -> Version:
        """The attempt's version as the gate last read it."""
        if self.version is None:
            raise BackfillError("gate not started")
        return self.version

    @property
    def attempt_no(self) -> int:
        return int(self.version.attempt_no) if self.version else 0

    def labels(self) -> dict[str, str]:
        return self.identity.labels(self.attempt_no)

    def begin(self) -> Version:
        self.version = self.catalog.begin_version(self.identity)
        self._tell(AttemptStage.BEGAN)
        return self.version

    def _tell(self, stage: AttemptStage, checks: list[CheckOutcome] | None = None, **details: Any) -> None:
        if self.observers and self.version is not None:
            event = AttemptEvent(
                stage, self.spec, self.identity, self.version, tuple(self.inputs), tuple(checks or ()), **details
            )
            notify(self.observers, event)

    def read_published(self, asset: str, partition_key: str, required: bool = True) -> pd.DataFrame | None:
        """Read the current published version of an input and record the read."""
        current = self.catalog.current(asset, partition_key)
        if current is None:
            if required:
                raise NotPublished(
                    f"{self.spec.name} {self.identity.interval.label}: input {asset} {partition_key} has no "
                    "published version yet"
                )
            return None
        frame = self.warehouse.read_version(current)
        self.catalog.record_reads(self.version_id, self.identity.dagster_run_id, [current])
        self.inputs.append(current)
        return frame

    def write_and_audit(
        self,
        frame: pd.DataFrame,
        available: Mapping[str, Any],
        source_fingerprint: str | None = None,
        extra_manifest: dict[str, Any] | None = None,
    ) -> list[CheckOutcome]:
        directory = self.warehouse.version_dir(
            self.spec.name, self.identity.partition_key, self.identity.logical_run_id, self.attempt_no
        )
        input_versions = {f"{v.asset}/{v.partition_key}": v.version_id for v in self.inputs}
        input_versions.update(
            {f"{key}/{self.identity.partition_key}": NOT_VERSIONED for key in self.spec.external_upstream}
        )
        self.written = self.warehouse.write(
            directory,
            frame,
            self.labels(),
            {
                "version_id": self.version_id,
                "input_versions": input_versions,
                "params_digest": self.identity.params_digest,
                "source_fingerprint": source_fingerprint,
                **(extra_manifest or {}),
            },
            day=self.identity.interval.key,
        )
        self.version = self.catalog.mark_verifying(
            self.version_id,
            path=self.written.path,
            rows=self.written.rows,
            sha256=self.written.sha256,
            manifest_sha256=self.written.manifest_sha256,
            stats=self.written.stats,
            input_versions=input_versions,
            source_fingerprint=source_fingerprint,
        )
        fault_point(AFTER_VERIFYING)
        return run_audits(self.spec, frame, available, self.written, self.warehouse, self.labels())

    def conclude(self, checks: list[CheckOutcome]) -> GateOutcome:
        check_rows = [c.as_dict() for c in checks]
        failed = [c.name for c in checks if not c.passed]
        loaded = self.identity.code_version
        if failed:
            error = f"blocking check(s) failed: {', '.join(failed)}"
        elif self.frozen_code_version and self.frozen_code_version != loaded:
            error = f"code version changed (frozen {self.frozen_code_version}, loaded {loaded}); refusing to publish"
        else:
            refused = self.publish_guard() if self.publish_guard else None
            if refused:
                # Not a rejection: the checks passed. The attempt is given up, like one that died mid-way.
                self.version = self.catalog.abandon(self.version_id, refused[:2000])
                self._tell(AttemptStage.ABANDONED, checks, error=refused, cancelled=True)
                raise PublishRefused(refused)
            self._prepare_publish()
            try:
                move = self.catalog.publish(self.version_id, check_rows)
            except PublishConflict as exc:
                error = str(exc)
            else:
                fault_point(AFTER_PUBLISH_COMMIT)
                # From the publish transaction itself: once the commit succeeded, losing the catalog must not
                # fail the step (a retry would publish a second attempt of this run).
                self.version = move.version or self.catalog.get(self.version_id)
                self._tell(AttemptStage.PUBLISHED, checks, previous_version_id=move.previous_version_id)
                return GateOutcome(self.version, True, checks, self.version_id, move)
        self.version = self.catalog.reject(self.version_id, check_rows, error)
        serving = self.catalog.current(self.spec.name, self.identity.partition_key)
        serving_id = serving.version_id if serving else None
        self._tell(AttemptStage.REJECTED, checks, error=error, serving_version_id=serving_id)
        return GateOutcome(self.version, False, checks, serving_id, error=error)

    def _prepare_publish(self) -> None:
        version = self.started
        for prepare in self.before_publish:
            try:
                prepare(version)
            except Exception as exc:  # noqa: BLE001 - a preparation never decides whether a version publishes
                why = " ".join(f"{type(exc).__name__}: {exc}".split())[:600]
                log.warning("%s: preparing its publish failed (%s); it publishes all the same", self.version_id, why)

    def abandon_if_unfinished(self, reason: str) -> None:
        """Called when the step raises before concluding; the version never becomes visible."""
        if self.version is None:
            return
        try:
            state = self.catalog.get(self.version_id).state
            if VersionState(state) in IN_PROGRESS:
                self.version = self.catalog.abandon(self.version_id, reason[:2000])
                self._tell(AttemptStage.ABANDONED, error=reason)
        except NotFound:
            pass


def earlier_publish(catalog: Catalog, identity: RunIdentity) -> GateOutcome | None:
    """The version an earlier attempt of this same logical run (same run, code and parameters) already published
    for the cell, as an outcome to report again, or None.

    An attempt can publish and still fail — the commit's acknowledgement lost with the connection, the process
    killed between the commit and the Dagster event. A retry must then report that version, not compute and
    publish a second one of the same run.
    """
    for version in reversed(catalog.versions_of(identity.asset, identity.partition_key)):
        if (
            version.logical_run_id == identity.logical_run_id
            and version.params_digest == identity.params_digest
            and version.code_version == identity.code_version
            and VersionState(version.state) in VERIFIED
        ):
            return GateOutcome(version, True, recorded_checks(version), version.version_id)
    return None


def serving_again(catalog: Catalog, asset: str, partition_key: str, left_alone: str) -> GateOutcome | None:
    """The version serving a cell that a backfill launched from Dagster left alone, as an outcome to report
    again with the checks it passed when it was published (nothing written), or None when nothing serves."""
    current = catalog.current(asset, partition_key)
    if current is None:
        return None
    return GateOutcome(current, True, recorded_checks(current), current.version_id, left_alone=left_alone)


def recorded_checks(version: Version) -> list[CheckOutcome]:
    """The check results the catalog recorded for a version when it was judged."""
    return [
        CheckOutcome(
            c["name"], bool(c["passed"]), c.get("description") or "",
            {k: v for k, v in c.items() if k not in ("name", "passed", "description")},
        )
        for c in version.checks or []
    ]
