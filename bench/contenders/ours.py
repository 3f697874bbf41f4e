"""O and B, ours: a backfill request created with the CLI and carried out by the driver sensor in
``backfill-assets-daemon run`` (dagster-daemon with its loops woken by new work).

O is one interval per run (``--partitions-per-run 1``); B is the default request path, what a user gets by typing
``request create`` without ``--partitions-per-run``: chunk runs of K consecutive days, K resolved when the request
is created. Until the CLI batches by default, B passes ``--partitions-per-run auto`` where the CLI accepts it,
and otherwise today's fixed K (``bench.run --partitions-per-run``); see :func:`batching_mode`. Nothing is
prepared: with ``--reprocess completed`` on an empty catalog the request itself computes
raw_orders..daily_revenue for every day, each day its own version, checks and publish.
"""

from __future__ import annotations

import json
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import dagster as dg

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.integration.sensors.adoption import ADOPTION_SENSOR
from backfill_assets.integration.sensors.driver import DRIVER_INTERVAL_SECONDS, DRIVER_SENSOR
from backfill_assets.integration.sensors.propagation import PROPAGATION_SENSOR

from ..checks import revenue_from_catalog
from ..daemons import OURS_DAEMON, command_text, daemon_argv
from ..dagster_facts import first_start, last_end, run_breakdown, runs_tagged, sensor_ticks, tick_breakdown
from ..dagster_home import dagster_env, instance_classes, make_home, open_instance
from ..measure import ProcessSampler
from ..orders import MODULE as CODE_LOCATION_MODULE
from ..outcome import Outcome
from ..plain import ASSETS
from ..services import service, wait_until
from ..workspace import REPO, Sizes, Workspace

DONE = (*M.CLOSED_STATUSES, M.BLOCKED)
PARTITIONS_OPTION = "--partitions-per-run"
AUTO = "auto"
# How B asks for chunk runs, from what `request create --help` says of --partitions-per-run:
DEFAULT_PATH = "default"  # batches by itself (`[default: auto]`): B passes no flag
AUTO_FLAG = "auto"  # accepts `auto`: B passes `--partitions-per-run auto`
FIXED_K = "fixed"  # integers only (before auto): B passes today's fixed K


def batching_mode(help_text: str) -> str:
    """``default``, ``auto`` or ``fixed``: what the ``--partitions-per-run`` entry of ``request create --help``
    says about ``auto``."""
    entry: list[str] = []
    for line in help_text.splitlines():
        stripped = line.strip()
        if stripped.startswith(PARTITIONS_OPTION):
            entry = [stripped]
        elif entry and stripped.startswith("-"):
            break
        elif entry:
            entry.append(stripped)
    text = " ".join(entry).lower()
    if f"[default: {AUTO}]" in text:
        return DEFAULT_PATH
    return AUTO_FLAG if AUTO in text.replace(PARTITIONS_OPTION, "") else FIXED_K


def cli_batching_mode(env: dict) -> str:
    """:func:`batching_mode` of the installed CLI (asked once, before anything is measured)."""
    argv = [dagster_bin("backfill-assets"), "request", "create", "--help"]
    proc = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, check=True)
    return batching_mode(proc.stdout)


def partitions_argv(mode: str, fixed_k: int) -> list[str]:
    """The ``request create`` arguments B's batching takes in ``mode``; O passes ``partitions_argv(FIXED_K, 1)``."""
    if mode == DEFAULT_PATH:
        return []
    if mode == AUTO_FLAG:
        return [PARTITIONS_OPTION, AUTO]
    return [PARTITIONS_OPTION, str(fixed_k)]


@dataclass(frozen=True)
class Created:
    """A request made with the CLI: its id, and when the command was invoked and when it returned (epoch s)."""

    request_id: str
    invoked: float
    returned: float

    @property
    def command_s(self) -> float:
        return round(self.returned - self.invoked, 2)


def request_argv(assets: Sequence[str], first: str, last: str, *options: str) -> list[str]:
    """``backfill-assets request create`` as a user would type it (``options``: anything beyond the range)."""
    return [dagster_bin("backfill-assets"), "request", "create", "--assets", ",".join(assets), "--from", first,
            "--to", last, *options, "--reason", "benchmark", "--requested-by", "bench", "--json"]


def create_request(env: dict, argv: list[str], sampler: ProcessSampler | None = None) -> Created:
    """Run ``request create`` (its process measured with ``sampler``); its id and the command's invoke/return."""
    invoked = time.time()
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if sampler is not None:
        sampler.add_root(proc.pid)
    out, err = proc.communicate()
    returned = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f"request create failed ({proc.returncode}): {err.decode()[-2000:]}")
    return Created(json.loads(out)["request_id"], invoked, returned)


@dataclass
class OursStack:
    """A fresh DAGSTER_HOME with the product's dagster.yaml and ``backfill-assets-daemon`` serving the orders
    location, ready (the driver sensor has ticked once)."""

    base: Path
    env: dict
    instance: dg.DagsterInstance
    daemon: subprocess.Popen
    catalog_url: str
    daemon_command: str

    @property
    def ledger(self) -> Ledger:
        return Ledger(Catalog(self.catalog_url))

    def wait_closed(self, request_id: str, timeout: float) -> None:
        """Polled once a second, like `request wait` (each read is a short catalog transaction)."""
        ledger = self.ledger
        wait_until(lambda: ledger.get(request_id).status in DONE, f"request {request_id}", timeout, [self.daemon],
                   1.0)


@contextmanager
def ours_stack(base: Path, source_url: str, max_active: int, module: str = CODE_LOCATION_MODULE, pool_limit: int = 0,
               **extra_env: str) -> Iterator[OursStack]:
    """``module``: the orders code location the daemon serves and the CLI loads (``BACKFILL_MODULE``)."""
    home = make_home(base / "home", max_active, pool_limit=pool_limit)
    env = dagster_env(home, source_url, BACKFILL_MODULE=module, **extra_env)
    argv = daemon_argv(module)
    # Create the instance's SQLite storage before the daemon opens it: two processes migrating a fresh home at
    # once leave two alembic heads and one of them fails (seen in the bench smoke test under `make test`).
    instance = open_instance(home)
    with service(OURS_DAEMON, argv, env, base / "logs", REPO) as daemon:
        # Ready = the driver sensor has ticked once (the daemon has loaded the code location).
        wait_until(lambda: bool(sensor_ticks(instance, DRIVER_SENSOR)), "driver sensor", 180, [daemon])
        yield OursStack(base, env, instance, daemon, Settings.from_env(env).catalog_url, command_text(argv))


def first_run_figures(records: list, created: Created) -> dict:
    """The first run's RUN_START counted from `request create` returning (the figure judged) and from its
    invocation, and the command's own seconds."""
    return {
        "create_command_s": created.command_s,
        "first_run_start_s": first_start(records, created.returned),
        "first_run_after_invocation_s": first_start(records, created.invoked),
    }


def run(ws: Workspace, sizes: Sizes, contender: str, timeout: float, extra_env: dict[str, str] | None = None,
        after: Callable[[OursStack, Created], dict] | None = None) -> Outcome:
    """O (one interval per run) or B (the default request path, chunk runs). ``extra_env``: settings of the daemon
    and the CLI beyond the bench's; ``after``: more details, read from the stack once the request is closed."""
    base = ws.dir(contender)
    module = sizes.code_location.module
    with ours_stack(base, ws.source_url, sizes.max_active, module, sizes.pool_limit, **(extra_env or {})) as stack:
        mode = FIXED_K if contender == "O" else cli_batching_mode(stack.env)
        partitions = partitions_argv(mode, 1 if contender == "O" else sizes.partitions_per_run)
        argv = request_argv(ASSETS, sizes.first, sizes.last, "--reprocess", "completed", "--max-active",
                            str(sizes.max_active), *partitions)
        with ProcessSampler([stack.daemon.pid]) as sampler:
            created = create_request(stack.env, argv, sampler)
            stack.wait_closed(created.request_id, timeout)
        record = stack.ledger.get(created.request_id)
        records = runs_tagged(stack.instance, T.REQUEST_ID, created.request_id)
        details = {
            "request_id": created.request_id,
            "status": record.status,
            "cells": stack.ledger.counts(created.request_id),
            "partitions_per_run": record.spec.partitions_per_run,  # K as the request resolved it
            "partitions_flag": " ".join(partitions) or "(none: the default path)",
            "code_location": module,
            **first_run_figures(records, created),
            "last_run_end_s": last_end(records, created.invoked),
            "driver_interval_s": DRIVER_INTERVAL_SECONDS,
            "daemon_command": stack.daemon_command,
            **instance_classes(stack.instance),
            "breakdown": run_breakdown(stack.instance, records, sizes.max_active),
            "sensor_ticks": tick_breakdown(stack.instance, (DRIVER_SENSOR, PROPAGATION_SENSOR, ADOPTION_SENSOR),
                                           created.invoked),
            **(after(stack, created) if after is not None else {}),
        }
    k = record.spec.partitions_per_run
    title = "ours, one interval per run" if contender == "O" else f"ours, default request path (K={k}, {mode})"
    check = revenue_from_catalog(stack.catalog_url, sizes.keys)
    return Outcome(contender, title, sampler.usage, len(records), check, details)
