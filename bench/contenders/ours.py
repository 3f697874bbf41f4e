"""O and B, ours: a backfill request created with the CLI and carried out by the driver sensor in dagster-daemon.

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


def create_request(env: dict, sizes: Sizes, partitions: list[str], sampler: ProcessSampler) -> tuple[str, float]:
    """``backfill-assets request create`` as a user would type it; returns the request id and its seconds."""
    argv = [
        dagster_bin("backfill-assets"), "request", "create", "--assets", ",".join(ASSETS),
        "--from", sizes.first, "--to", sizes.last, "--reprocess", "completed",
        "--max-active", str(sizes.max_active), *partitions,
        "--reason", "benchmark", "--requested-by", "bench", "--json",
    ]
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler.add_root(proc.pid)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"request create failed ({proc.returncode}): {err.decode()[-2000:]}")
    return json.loads(out)["request_id"], time.monotonic() - started


def run(ws: Workspace, sizes: Sizes, contender: str, timeout: float) -> Outcome:
    """O (one interval per run) or B (the default request path, chunk runs)."""
    base = ws.dir(contender)
    home = make_home(base / "home", sizes.max_active)
    env = dagster_env(home, ws.source_url)
    mode = FIXED_K if contender == "O" else cli_batching_mode(env)
    partitions = partitions_argv(mode, 1 if contender == "O" else sizes.partitions_per_run)
    catalog_url = Settings.from_env(env).catalog_url
    argv = [dagster_bin("dagster-daemon"), "run", "-m", CODE_LOCATION_MODULE]
    # Create the instance's SQLite storage before the daemon opens it: two processes migrating a fresh home at
    # once leave two alembic heads and one of them fails (seen in the bench smoke test under `make test`).
    instance = open_instance(home)
    with service("dagster-daemon", argv, env, base / "logs", REPO) as daemon:
        # Ready = the driver sensor has ticked once (the daemon has loaded the code location).
        wait_until(lambda: bool(sensor_ticks(instance, DRIVER_SENSOR)), "driver sensor", 180, [daemon])
        ledger = Ledger(Catalog(catalog_url))
        with ProcessSampler([daemon.pid]) as sampler:
            started = time.time()
            request_id, create_s = create_request(env, sizes, partitions, sampler)
            # Polled once a second, like `request wait` (each read is a short catalog transaction).
            wait_until(lambda: ledger.get(request_id).status in DONE, f"request {request_id}", timeout, [daemon], 1.0)
        record = ledger.get(request_id)
        counts = ledger.counts(request_id)
        records = runs_tagged(instance, T.REQUEST_ID, request_id)
        details = {
            "request_id": request_id,
            "status": record.status,
            "cells": counts,
            "partitions_per_run": record.spec.partitions_per_run,  # K as the request resolved it
            "partitions_flag": " ".join(partitions) or "(none: the default path)",
            "create_command_s": round(create_s, 2),
            "first_run_start_s": first_start(records, started),
            "last_run_end_s": last_end(records, started),
            "driver_interval_s": DRIVER_INTERVAL_SECONDS,
            **instance_classes(instance),
            "breakdown": run_breakdown(instance, records, sizes.max_active),
            "sensor_ticks": tick_breakdown(instance, (DRIVER_SENSOR, PROPAGATION_SENSOR, ADOPTION_SENSOR), started),
        }
    k = record.spec.partitions_per_run
    title = "ours, one interval per run" if contender == "O" else f"ours, default request path (K={k}, {mode})"
    check = revenue_from_catalog(catalog_url, sizes.keys)
    return Outcome(contender, title, sampler.usage, len(records), check, details)
