"""Creating a sensor's run outside the daemon, as Dagster's sensor daemon creates it (``dagster._daemon.sensor``
``_create_sensor_run``), for a process that has the code location imported (``request create``).

Dagster 1.13 has no public API for it: a queued run needs the job and execution plan snapshots, the remote origin
the daemon's workspace knows the code location by (its dequeuer and launcher find the code server by its name)
and the Python origin the code server reports (a run launcher starts the run's process from it: its image, its
container context; the warm run launcher keys its workers by it). The snapshots come from ``InProcessCodeLocation``
over the module this process imported (no code server). The remote origin is the sensor's instigator state's, which
the daemon wrote when it first evaluated the sensor. The Python origin is the one of the newest run the daemon's
own tick created for the sensor in that code location; before there is one, the one a code server the daemon
starts itself (a managed one: ``dagster-daemon run -m``, a workspace's ``python_module``) reports for its loadable
target, and for a code server the daemon only connects to (``dagster dev``, Kubernetes), none: nothing is created
here then, the sensor does it. So the run is the one the sensor's tick would have created but for ``dagster/tick``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import dagster as dg
from dagster._core.definitions.selector import JobSubsetSelector
from dagster._core.remote_origin import InProcessCodeLocationOrigin, RemoteJobOrigin
from dagster._core.remote_representation.code_location import InProcessCodeLocation
from dagster._core.scheduler.instigation import InstigatorType
from dagster._core.storage.tags import RUN_KEY_TAG, SENSOR_NAME_TAG, TICK_ID_TAG
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from .origins import loadable_target

# The newest runs of a sensor searched for one its daemon's tick created in the code location.
RUNS_SEARCHED = 20


@dataclass(frozen=True)
class SensorOrigin:
    """Where the daemon evaluates a code location's sensor: ``repository_origin`` (a ``RemoteRepositoryOrigin``,
    what the sensor's runs name as their remote origin), the Python origin its code server reported for the newest
    run the daemon created for the sensor (a ``RepositoryPythonOrigin``; None before the first), and the loadable
    target of a code server the daemon starts itself (a ``LoadableTargetOrigin``; None for one it connects to),
    and the cursor the sensor's last tick left."""

    location_name: str
    repository_origin: Any
    python_origin: Any | None
    loadable_target: Any | None
    cursor: str | None = None  # the sensor's cursor after its last tick


def sensor_origin(instance: dg.DagsterInstance, sensor_name: str, module_name: str) -> SensorOrigin | None:
    """The origin of the running sensor ``sensor_name`` of the code location ``module_name`` (by its location
    name, or the module its code server loads), as the daemon last evaluated it; None when no daemon has, when it
    is stopped, when several code locations could be meant, or when its runs' Python origin is not known here."""
    states = [
        state for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
        if state.instigator_name == sensor_name and _is_location(state.origin.repository_origin, module_name)
    ]
    if not states or len({s.origin.repository_origin.code_location_origin.location_name for s in states}) != 1:
        return None
    # A daemon restarted elsewhere (another working directory) leaves a state per origin: the newest tick's wins.
    state = max(states, key=lambda s: _last_tick(instance, s))
    if not state.is_running:
        return None  # stopped in the UI: nothing submits for it, this process neither
    repository_origin = state.origin.repository_origin
    location = repository_origin.code_location_origin
    python_origin = _daemon_python_origin(instance, sensor_name, repository_origin)
    target = loadable_target(location)
    if python_origin is None and target is None:
        return None
    cursor = getattr(state.instigator_data, "cursor", None)
    return SensorOrigin(location.location_name, repository_origin, python_origin, target, cursor)


def _is_location(repository_origin: Any, module_name: str) -> bool:
    location = repository_origin.code_location_origin
    target = loadable_target(location)
    return location.location_name == module_name or getattr(target, "module_name", None) == module_name


def _last_tick(instance: dg.DagsterInstance, state: Any) -> float:
    ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=1)
    return ticks[0].timestamp if ticks else 0.0


def _daemon_python_origin(instance: dg.DagsterInstance, sensor_name: str, repository_origin: Any) -> Any | None:
    """The Python origin of the newest run the daemon's tick created for the sensor in this code location (a tick's
    run carries ``dagster/tick``; one created outside the daemon does not, and is never copied from)."""
    selector = repository_origin.get_selector()
    for run in instance.get_runs(dg.RunsFilter(tags={SENSOR_NAME_TAG: sensor_name}), limit=RUNS_SEARCHED):
        origin = run.remote_job_origin
        if TICK_ID_TAG in run.tags and origin is not None and run.job_code_origin is not None \
                and origin.repository_origin.get_selector() == selector:
            return run.job_code_origin.repository_origin
    return None


class SensorRuns:
    """Creates and queues the runs of one sensor of one code location in this process: ``module_name`` already
    imported here (its definitions are the ones the daemon's code server loads), ``origin`` the daemon's. Use it
    as a context manager: the in-process code location is released at the end."""

    def __init__(self, instance: dg.DagsterInstance, origin: SensorOrigin, module_name: str, working_directory: str,
                 sensor_name: str):
        target = origin.loadable_target or LoadableTargetOrigin(
            executable_path=sys.executable, module_name=module_name, working_directory=working_directory)
        if target.working_directory is None:  # the code server's is the daemon's own, as this process's
            target = target._replace(working_directory=working_directory)
        self._instance = instance
        self._origin = origin
        self._sensor_name = sensor_name
        # A managed code server reports an empty container context: the same Python origin, the same warm worker.
        self._location = InProcessCodeLocation(
            InProcessCodeLocationOrigin(target, container_context={}, location_name=origin.location_name),
            instance=instance)
        self._repository = self._location.get_repository(origin.repository_origin.repository_name)

    def __enter__(self) -> SensorRuns:
        return self

    def __exit__(self, *exc: object) -> None:
        self._location.cleanup()

    def job_definition(self, job_name: str) -> dg.JobDefinition:
        return self._location.get_reconstructable_job(self._repository.name, job_name).get_definition()

    def existing_run_id(self, run_key: str) -> str | None:
        """A run any process already created for ``run_key`` (the sensor's tick, another ``create``)."""
        runs = self._instance.get_runs(filters=dg.RunsFilter(tags={RUN_KEY_TAG: run_key}), limit=1)
        return runs[0].run_id if runs else None

    def submit(self, run_request: dg.RunRequest) -> str:
        """Create the run of ``run_request`` (its tags, partition and config resolved as the sensor's evaluation
        resolves them) and hand it to the instance's run coordinator; returns its run id."""
        job_name = run_request.job_name or ""
        if run_request.partition_key is not None:
            run_request = run_request.with_resolved_tags_and_config(self.job_definition(job_name), [], self._instance)
        remote_job = self._location.get_job(JobSubsetSelector(
            location_name=self._origin.location_name, repository_name=self._repository.name, job_name=job_name,
            op_selection=None, asset_selection=run_request.asset_selection,
            asset_check_selection=run_request.asset_check_keys,
        ))
        plan = self._location.get_execution_plan(remote_job, run_request.run_config, step_keys_to_execute=None,
                                                 known_state=None, instance=self._instance)
        tags = {**(remote_job.run_tags or {}), **run_request.tags, SENSOR_NAME_TAG: self._sensor_name}
        if run_request.run_key:
            tags[RUN_KEY_TAG] = run_request.run_key
        run = self._instance.create_run(
            job_name=job_name, run_id=None, run_config=run_request.run_config,
            resolved_op_selection=remote_job.resolved_op_selection, step_keys_to_execute=None,
            status=dg.DagsterRunStatus.NOT_STARTED, op_selection=None, root_run_id=None, parent_run_id=None,
            tags=tags, job_snapshot=remote_job.job_snapshot, execution_plan_snapshot=plan.execution_plan_snapshot,
            parent_job_snapshot=remote_job.parent_job_snapshot,
            remote_job_origin=RemoteJobOrigin(repository_origin=self._origin.repository_origin, job_name=job_name),
            job_code_origin=self._origin.python_origin.get_job_origin(job_name) if self._origin.python_origin
            else remote_job.get_python_origin(),
            asset_selection=frozenset(run_request.asset_selection) if run_request.asset_selection is not None
            else None,
            asset_check_selection=frozenset(run_request.asset_check_keys)
            if run_request.asset_check_keys is not None else None,
            asset_graph=self._repository.asset_graph,
        )
        # A queued run coordinator reads no workspace: the daemon's dequeuer launches the run from its own.
        self._instance.submit_run(run.run_id, None)  # type: ignore[arg-type]
        return run.run_id
