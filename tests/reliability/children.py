"""Code that runs in child processes (the forkserver preloads this module, so a child starts in ~0.1 s).

Every child takes its environment (DAGSTER_HOME, catalog URL, code version, fault) as an argument and installs
it before touching the product: the forkserver was started once, with whatever environment the session had.
"""

from __future__ import annotations

import os
import warnings

warnings.simplefilter("ignore")

import dagster as dg  # noqa: E402

import backfill_assets.examples.orders.definitions  # noqa: E402,F401 - preload: the code location, once
from backfill_assets.engine.wap.faults import ENV_FAULT  # noqa: E402
from tests.orders import GRAPH  # noqa: E402
from tests.specs import spec_of  # noqa: E402


def _install_env(env: dict[str, str], fault: str | None = None) -> None:
    warnings.simplefilter("ignore")
    for key in ("BACKFILL_WAREHOUSE", "BACKFILL_CATALOG_URL", "BACKFILL_SOURCE_URL", "BACKFILL_SINK_PATH", ENV_FAULT):
        os.environ.pop(key, None)
    os.environ.update(env)
    if fault:
        os.environ[ENV_FAULT] = fault


def run_partition(env: dict, fault: str | None, partition: str, assets: list[str], tags: dict, run_config: dict,
                  results=None) -> None:
    """One in-process Dagster run of ``assets`` for ``partition``; a fault point SIGKILLs this process."""
    _install_env(env, fault)
    from tests.orders import run_partitions

    with dg.DagsterInstance.get() as instance:
        [run] = run_partitions(instance, [partition], assets=assets, tags=tags, run_config_for={partition: run_config})
    if results is not None:
        results.put({"run_id": run.run_id, "success": run.success, "failure": run.failure})


def race_create(env: dict, how: str, args: dict, barrier, results) -> None:
    """Create a request at the same instant as a sibling process: through the CLI or through Ledger.create."""
    _install_env(env)
    try:
        if how == "cli":
            from click.testing import CliRunner

            from backfill_assets.cli import cli

            argv = ["request", "create", "--assets", args["assets"], "--from", args["first"], "--to", args["last"],
                    "--requested-by", args["who"], "--json"]
            runner = CliRunner()
            barrier.wait(timeout=60)
            result = runner.invoke(cli, argv)
            crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
            out = {"exit": result.exit_code, "stdout": result.stdout, "stderr": result.stderr,
                   "exception": repr(result.exception) if crashed else None}
        else:
            from backfill_assets.engine.model import request_model as M
            from backfill_assets.engine.model.errors import BackfillError
            from backfill_assets.engine.model.intervals import utc_now
            from backfill_assets.engine.model.settings import Settings
            from backfill_assets.engine.store.catalog import Catalog
            from backfill_assets.engine.store.ledger import Ledger
            from tests.orders import CALENDAR as calendar

            spec = spec_of(GRAPH, calendar.newest_complete_key(utc_now()), assets=args["assets"],
                                first=args["first"], last=args["last"], requested_by=args["who"])
            ledger = Ledger(Catalog(Settings.from_env().catalog_url))
            request_id = M.new_request_id(utc_now())
            barrier.wait(timeout=60)
            try:
                record = ledger.create(request_id, spec, "race-code", spec.excluded_cells(GRAPH))
            except BackfillError as exc:
                out = {"exit": 2, "stdout": "", "stderr": f"error: {exc}\n", "exception": None,
                       "request_id": request_id}
            else:
                out = {"exit": 0, "stdout": "", "stderr": "", "exception": None, "request_id": record.request_id}
        results.put((args["who"], out))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which counts it as a failure
        results.put((args["who"], {"exit": None, "exception": f"{type(exc).__name__}: {exc}"}))
        barrier.abort()


def race_publish(env: dict, partition: str, asset: str, tags: dict, label: str, barrier, results) -> None:
    """A real Dagster run of ``asset`` whose step waits for its sibling right before ``catalog.publish``."""
    _install_env(env)
    try:
        from backfill_assets.engine.store.catalog import Catalog
        from tests.orders import run_partitions

        original = Catalog.publish

        def publish_together(self, version_id, checks):
            barrier.wait(timeout=60)  # both versions are VERIFYING with the same expected pointer
            return original(self, version_id, checks)

        Catalog.publish = publish_together
        with dg.DagsterInstance.get() as instance:
            [run] = run_partitions(instance, [partition], assets=[asset], tags=tags)
        results.put((label, {"run_id": run.run_id, "success": run.success, "failure": run.failure}))
    except BaseException as exc:  # noqa: BLE001
        results.put((label, {"run_id": None, "success": None, "failure": f"{type(exc).__name__}: {exc}"}))
        barrier.abort()
