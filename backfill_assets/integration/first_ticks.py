"""Where a service built outside the CLI finds the driver tick its ``create`` does (``runs/direct_tick.py``): for a
Python caller's definitions, or for the module a Launchpad run was loaded from.

The tick lives beside the driver sensor, which builds the Launchpad's jobs, whose service is built by
``service_wiring``: importing it from there would be a cycle. So ``runs/direct_tick.py`` registers its two makers
here when it is imported, which every code location built by ``backfill_definitions`` does; without them (given
a bare graph, say) a request is left to the driver sensor's next pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dagster as dg

from backfill_assets.integration.dagster_port import DriveNow


@dataclass(frozen=True)
class TickMakers:
    of_definitions: Callable[[Any], DriveNow | None]  # the definitions a Python caller gave
    of_run: Callable[[dg.DagsterRun], DriveNow | None]  # a run's own process, for the module it was loaded from


_registered: list[TickMakers] = []


def register(makers: TickMakers) -> None:
    _registered[:] = [makers]


def tick_of_definitions(definitions: Any) -> DriveNow | None:
    return _registered[0].of_definitions(definitions) if _registered else None


def tick_of_run(run: dg.DagsterRun) -> DriveNow | None:
    return _registered[0].of_run(run) if _registered else None
