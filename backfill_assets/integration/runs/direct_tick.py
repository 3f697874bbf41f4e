"""A request's driver tick done by the process that made it (``request create``): the runs the driver sensor would
submit now, created as the sensor's tick creates them and queued through the instance's run coordinator, so the
first runs start at the run queue's next pass instead of waiting for the daemon's next pass over its sensors
(Dagster's own daemon: every ~5 s).

Nothing is submitted twice. The tick is the sensor's (``driver.drive_request``): it records its decisions before any
run exists, by compare-and-swap on the request's tick token, so of this tick and a sensor's tick at the same moment
one records and the other submits nothing. It ticks only when the daemon's code server runs this process's code
(the driver's Dagster cursor is the code version it loaded), so it decides what the sensor would: a request frozen
under other code is the sensor's to block. A cell recorded here whose run this process then failed to create is
requested again by the sensor, with the same run key, once ``REREQUEST_GRACE_SECONDS`` have passed; a run key that
already has a run is never created again; and Dagster's sensor daemon skips a run key whose run this process created
(the run names the sensor and the daemon's code location). The sensor stays what drives every request.

The same tick is done by a Python caller's ``Backfills.create`` (``DefinitionsTick``: the module it imported the
definitions from), by the Launchpad's ``backfill_request`` run and by a request's run that has just ended
(``runs/run_end_tick.py``), both for the module their run was loaded from (``run_module_tick``).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.plan.driver_tick import Submission
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger, RequestRecord
from backfill_assets.integration.first_ticks import TickMakers, register
from backfill_assets.integration.runs.coordinator import submitted_elsewhere
from backfill_assets.integration.runs.dagster_adapter import SensorRuns, sensor_origin
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR, drive_request, drives, run_request_for
from backfill_assets.service.ports import DrivenNow

logger = logging.getLogger("backfill_assets.direct_tick")

NOT_QUEUED = "the instance's run coordinator launches runs without a queue: the daemon's sensor submits them"
NO_SENSOR = "no daemon runs this code location's driver sensor yet (or it is stopped)"
OTHER_CODE = "the daemon's code server runs another code version than this process: its driver decides"
NO_MODULE = "the definitions were not imported from a module the daemon can load"
# Modules a Python caller's definitions may be found in that no code server can load.
NOT_LOADABLE = ("__main__", "__mp_main__")


@dataclass(frozen=True)
class DirectTick:
    """Drives one request now, in this process, for the code location ``module_name`` this process imported
    (from ``working_directory``, where a daemon that has not evaluated it yet would load it too). ``queued_by``:
    the run whose end this tick follows, named on the runs it queues (``backfill/queued_by``)."""

    module_name: str
    working_directory: str
    queued_by: str | None = None

    def __call__(self, instance: dg.DagsterInstance, graph: AssetGraph, catalog: Catalog,
                 request_id: str) -> DrivenNow:
        with self.prepare(instance, graph) as prepared:
            return prepared.drive(catalog, request_id)

    @contextmanager
    def prepare(self, instance: dg.DagsterInstance, graph: AssetGraph) -> Iterator[PreparedTick]:
        """What the tick needs that no request's state decides (the daemon's origin of the driver sensor, the code
        location loaded in this process), made ready ahead: a run's end prepares while Dagster writes the run's
        end, so what is left after it (``PreparedTick.drive``) is only the driver's decisions and the runs."""
        if not isinstance(instance.run_coordinator, dg.QueuedRunCoordinator):
            yield PreparedTick(self, instance, graph, refusal=NOT_QUEUED)
            return
        origin = sensor_origin(instance, DRIVER_SENSOR, self.module_name)
        if origin is None:
            yield PreparedTick(self, instance, graph, refusal=NO_SENSOR)
            return
        loaded = code_version(sources=graph.code_sources)
        if origin.cursor != loaded:  # the driver's cursor: the code version its code server loaded
            yield PreparedTick(self, instance, graph, refusal=OTHER_CODE)
            return
        # The code location is made ready before the tick records anything: recorded cells get their runs at once.
        with SensorRuns(instance, origin, self.module_name, self.working_directory, DRIVER_SENSOR) as runs:
            yield PreparedTick(self, instance, graph, loaded=loaded, runs=runs)

    def run_request(self, graph: AssetGraph, record: RequestRecord, submission: Submission) -> dg.RunRequest:
        request = run_request_for(graph, record, submission)
        if self.queued_by is None:
            return request
        return request.with_replaced_attrs(tags={**request.tags, T.QUEUED_BY: self.queued_by})


@dataclass(frozen=True)
class PreparedTick:
    """A ``DirectTick`` made ready (``DirectTick.prepare``): ``drive`` does the tick for one request, or says why
    it is left to the sensor (``refusal``)."""

    tick: DirectTick
    instance: dg.DagsterInstance
    graph: AssetGraph
    refusal: str | None = None
    loaded: str = ""
    runs: SensorRuns | None = None

    def drive(self, catalog: Catalog, request_id: str) -> DrivenNow:
        if self.refusal is not None or self.runs is None:
            return DrivenNow(left_to_sensor=self.refusal or NO_SENSOR)
        record = Ledger(catalog).get(request_id)
        if record.status not in M.ACTIVE_STATUSES or not drives(self.graph, record):
            return DrivenNow(left_to_sensor=f"request {request_id} is {record.status} or not this location's")
        submissions = drive_request(self.graph, self.instance, catalog, record, self.loaded)
        with submitted_elsewhere():  # the daemon launches them: no warm run worker in this process
            for submission in submissions:
                if self.runs.existing_run_id(submission.run_key) is None:
                    self.runs.submit(self.tick.run_request(self.graph, record, submission))
        logger.debug("request %s: %d run(s) queued by its own driver tick", request_id, len(submissions))
        return DrivenNow(run_keys=tuple(s.run_key for s in submissions))


def run_module_tick(run: dg.DagsterRun, queued_by: str | None = None) -> DirectTick | None:
    """The tick of a run's own process, for the module its code was loaded from (a code location given as a module
    or package: the code server's ``-m``, a workspace's ``python_module``); None for one loaded from a file."""
    pointer = getattr(getattr(run.job_code_origin, "repository_origin", None), "code_pointer", None)
    module = getattr(pointer, "module", None)
    if not isinstance(module, str) or not module:
        return None
    return DirectTick(module, getattr(pointer, "working_directory", None) or os.getcwd(), queued_by)


@dataclass(frozen=True)
class DefinitionsTick:
    """A Python caller's tick: the service was given ``definitions`` imported from a module, which is the code
    location the daemon loads when one of the modules holding them is its module (tried in turn, the package
    before its submodules). Found on the first create, not when the service is built."""

    definitions: Any

    def __call__(self, instance: dg.DagsterInstance, graph: AssetGraph, catalog: Catalog,
                 request_id: str) -> DrivenNow:
        driven = DrivenNow(left_to_sensor=NO_MODULE)
        for module in modules_holding(self.definitions):
            driven = DirectTick(module, os.getcwd())(instance, graph, catalog, request_id)
            if driven.left_to_sensor != NO_SENSOR:
                return driven
        return driven


def modules_holding(value: Any) -> list[str]:
    """The imported modules that hold ``value`` as a module-level name, shortest name first."""
    found = [name for name, module in list(sys.modules.items())
             if name not in NOT_LOADABLE and module is not None
             and any(held is value for held in list(getattr(module, "__dict__", {}).values()))]
    return sorted(found, key=lambda name: (name.count("."), name))


register(TickMakers(of_definitions=DefinitionsTick, of_run=run_module_tick))
