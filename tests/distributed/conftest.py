"""Steps on two Celery workers: the orders code location ``on_celery`` under a real ``dagster-daemon``, Dagster's
storage, the catalog and the source on PostgreSQL (fresh databases), the warehouse on the S3 server (through a
proxy that can take the endpoint down), the broker a fresh RabbitMQ virtual host. The workers are separate
processes with their own DAGSTER_HOME and working directory; the daemon has a third. Nothing but those services
connects them.
"""

from __future__ import annotations

import os
import shutil
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import dagster as dg
import pytest

from backfill_assets.engine.model.settings import ENV_CATALOG_URL, ENV_SOURCE_URL, ENV_WAREHOUSE
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.wap.faults import AFTER_VERIFYING, ENV_HOLD
from backfill_assets.examples.orders.source import SourceSystem
from tests.celery_stack import CELERY_DEPLOY_DIR, CODE_LOCATION_MODULE, ENV_BROKER, CeleryWorker, rabbitmq_vhost
from tests.celery_stack import start_workers as start_celery_workers
from tests.conftest import fresh_pg_database
from tests.e2e.conftest import CODE_VERSION, E2E, ORDERS_PER_DAY, start_daemon, stop_process
from tests.orders import CALENDAR
from tests.outage_proxy import OutageProxy
from tests.reliability.conftest import trials  # noqa: F401 - worker kills are a fault class of docs/RELIABILITY.md
from tests.s3 import RETRY_VARIABLES, environment_for, forget_s3_clients

WORKER_NAMES = ("w1", "w2")
SEED_FROM, SEED_TO = "2022-10-01", "2022-10-31"


@dataclass
class CeleryStack(E2E):
    """The e2e harness (the CLI in this process, the catalog, Dagster's records) plus the Celery workers."""

    root: Path = field(default=Path())
    worker_env: dict = field(default_factory=dict)
    workers: dict[str, CeleryWorker] = field(default_factory=dict)
    proxy: OutageProxy | None = None  # in front of the S3 server: down() / up()

    def start_workers(self, names: Iterable[str]) -> None:
        """Start (or replace, as new machines with nothing left behind) the workers ``names``, side by side."""
        for name in names:
            if name in self.workers:
                self.workers[name].stop()
                shutil.rmtree(self.root / "workers" / name, ignore_errors=True)
        # The hold is inert until a test creates the file: the worker then waits after its checks, before publish.
        started = start_celery_workers(
            {name: {**self.worker_env, ENV_HOLD: f"{AFTER_VERIFYING}={self.hold_file(name)}"} for name in names},
            self.root / "workers",
        )
        self.workers.update(started)

    @property
    def warehouse(self) -> Warehouse:
        return Warehouse(self.settings.warehouse_root)

    def hold_file(self, worker: str) -> Path:
        return self.root / f"hold-{worker}"

    def stop_workers(self) -> None:
        for worker in self.workers.values():
            worker.stop()


@pytest.fixture(scope="package")
def celery_stack(tmp_path_factory, pg_server, s3_server) -> Iterator[CeleryStack]:
    root = tmp_path_factory.mktemp("celery")
    home = root / "daemon"
    home.mkdir()
    shutil.copy(CELERY_DEPLOY_DIR / "dagster.yaml", home / "dagster.yaml")
    mp = pytest.MonkeyPatch()
    with ExitStack() as stack:
        stack.callback(mp.undo)
        dagster_url, catalog_url, source_url = (
            stack.enter_context(fresh_pg_database(pg_server)) for _ in range(3)
        )
        broker = stack.enter_context(rabbitmq_vhost())
        # Every S3 client (daemon, runs, workers, this process) goes through a proxy a test can take down.
        proxy = s3_server.outage_proxy(root)
        stack.callback(proxy.stop)
        stack.callback(forget_s3_clients)
        settings = {
            **environment_for(proxy.endpoint),
            **RETRY_VARIABLES,
            "DAGSTER_HOME": str(home),
            "DAGSTER_PG_URL": dagster_url,
            ENV_CATALOG_URL: catalog_url,
            ENV_SOURCE_URL: source_url,
            ENV_WAREHOUSE: s3_server.new_root(),
            ENV_BROKER: broker,
            "BACKFILL_CODE_VERSION": CODE_VERSION,
        }
        for name, value in settings.items():
            mp.setenv(name, value)
        forget_s3_clients()
        mp.delenv("BACKFILL_SINK_PATH", raising=False)
        SourceSystem(source_url).seed(CALENDAR, SEED_FROM, SEED_TO, ORDERS_PER_DAY)
        instance = stack.enter_context(dg.DagsterInstance.get())
        daemon, log = start_daemon(instance, home, "-m", CODE_LOCATION_MODULE)
        stack.callback(stop_process, daemon)
        harness = CeleryStack(
            home, instance, daemon, log, root=root, worker_env=dict(os.environ), proxy=proxy
        )
        stack.callback(harness.stop_workers)
        harness.start_workers(WORKER_NAMES)
        yield harness
