"""The Celery stack of ``bench/distributed.py``, as deploy/celery describes it, brought up fresh for each trial.

Shared by every trial: moto_server (one S3 server, a new prefix per trial) and the source on PostgreSQL, seeded
once (seeding is deterministic per day; 40 days at 20,000 orders take longer than a trial's whole stack). New for
each trial, so that no trial inherits another's state: the Dagster storage and the catalog (two new PostgreSQL
databases), a RabbitMQ virtual host (the queue is always named ``dagster``: a message left behind would be run
by the next trial's workers), ``backfill-assets-daemon`` (dagster-daemon woken by new work) serving
``orders.on_celery`` on its own DAGSTER_HOME, and the workers (``tests/celery_stack.py``: ``dagster-celery worker
start ... --pool=solo``, each with its own home).

``tests/celery_stack.py`` is the one piece of the test suite the benchmark reuses (elsewhere bench code starts its
own services): it is the worker command line and vhost handling that the distributed tests already prove, and a
second copy could drift from what they test.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import dagster as dg
import psutil
import sqlalchemy as sa

from backfill_assets.engine.model.settings import ENV_CATALOG_URL, ENV_SOURCE_URL, ENV_WAREHOUSE
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.examples.orders.source import SourceSystem
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR
from tests.celery_stack import CELERY_DEPLOY_DIR, CODE_LOCATION_MODULE, ENV_BROKER, CeleryWorker, rabbitmq_vhost
from tests.celery_stack import start_worker as start_celery_worker

from .daemons import OURS_DAEMON, daemon_argv
from .dagster_facts import sensor_ticks
from .environ import environment
from .pg import temporary_database
from .plain import CALENDAR
from .s3_server import S3Server
from .services import service, wait_until
from .workspace import REPO

CODE_VERSION = "bench"  # fixed: the driver compares it on every tick, and git is not asked on the hot path
DAEMON_READY_TIMEOUT_S = 180.0
BROKER_PORT = 5672


@dataclass(frozen=True)
class Shared:
    """What every trial reuses: the maintenance database URL, the seeded source and the S3 server."""

    pg_url: str
    source_url: str
    s3: S3Server


@dataclass
class Stack:
    """One trial's stack, ready: the daemon has ticked the driver sensor, every worker said it is ready."""

    root: Path
    env: dict[str, str]
    catalog_url: str
    warehouse: str
    instance: dg.DagsterInstance
    daemon: subprocess.Popen
    workers: list[CeleryWorker] = field(default_factory=list)

    @property
    def worker_names(self) -> list[str]:
        return [w.name for w in self.workers]

    def worker_pids(self) -> dict[int, str]:
        """Every process of each worker (the CLI and the celery process that runs the steps) -> its name."""
        pids = {}
        for worker in self.workers:
            try:
                session = os.getsid(worker.process.pid)
            except ProcessLookupError:
                continue
            for proc in psutil.process_iter():
                try:
                    if os.getsid(proc.pid) == session:
                        pids[proc.pid] = worker.name
                except (ProcessLookupError, PermissionError):
                    continue
        return pids


@contextmanager
def seeded_source(pg_url: str, first: str, last: str, orders_per_day: int) -> Iterator[tuple[str, int]]:
    """A temporary source database with the orders of ``[first, last]``; yields its URL and the rows inserted."""
    with temporary_database(pg_url, "bench_celery_source") as url:
        try:
            yield url, SourceSystem(url).seed(CALENDAR, first, last, orders_per_day)
        finally:
            dispose_all()  # the drop (WITH FORCE) would otherwise cut the pooled connections from under them


def postgres_server_pid(pg_url: str) -> int | None:
    """The postmaster of the server behind ``pg_url``: the parent of one of its backends (ours)."""
    engine = sa.create_engine(pg_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            backend = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
            parent = psutil.Process(backend).parent()
    except (sa.exc.SQLAlchemyError, psutil.Error):
        return None  # another host or another user's namespace: not measured
    finally:
        engine.dispose()
    return parent.pid if parent else None


def broker_pid(port: int = BROKER_PORT) -> int | None:
    """The process listening on the broker's port on this machine (RabbitMQ's beam.smp), if we may see it."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return conn.pid
    except psutil.Error:
        pass
    return None


def _env(shared: Shared, home: Path, dagster_url: str, catalog_url: str, warehouse: str, broker: str) -> dict:
    env = {
        **os.environ,
        **shared.s3.environment,
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_URL": dagster_url,
        ENV_CATALOG_URL: catalog_url,
        ENV_SOURCE_URL: shared.source_url,
        ENV_WAREHOUSE: warehouse,
        ENV_BROKER: broker,
        "BACKFILL_CODE_VERSION": CODE_VERSION,
        "BACKFILL_MODULE": CODE_LOCATION_MODULE,  # the CLI's code location: the one the daemon serves
        # This checkout's package in every process, whatever the virtualenv has installed.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    for name in ("BACKFILL_SINK_PATH", "AWS_PROFILE"):
        env.pop(name, None)
    return env


@contextmanager
def trial_stack(shared: Shared, root: Path, workers: int) -> Iterator[Stack]:
    """A fresh stack with ``workers`` Celery workers (w1, w2, ...) under ``root``; everything stopped and dropped
    on exit (workers, daemon, vhost, databases)."""
    home = root / "daemon"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(CELERY_DEPLOY_DIR / "dagster.yaml", home / "dagster.yaml")
    with ExitStack() as stack:
        dagster_url = stack.enter_context(temporary_database(shared.pg_url, "bench_celery_dagster"))
        catalog_url = stack.enter_context(temporary_database(shared.pg_url, "bench_celery_catalog"))
        stack.callback(dispose_all)  # before the drops: the harness's catalog engines hold connections
        broker = stack.enter_context(rabbitmq_vhost("backfill-bench"))
        warehouse = shared.s3.root(root.name)
        env = _env(shared, home, dagster_url, catalog_url, warehouse, broker)
        stack.enter_context(environment({"DAGSTER_PG_URL": dagster_url}))
        # Dagster's tables exist before the daemon opens them: two processes migrating one fresh database race.
        instance = stack.enter_context(dg.DagsterInstance.from_config(str(home)))
        argv = daemon_argv(CODE_LOCATION_MODULE)
        daemon = stack.enter_context(service(OURS_DAEMON, argv, env, root / "logs", home))
        # Ready = the driver sensor has ticked once: the daemon has loaded the code location.
        wait_until(lambda: bool(sensor_ticks(instance, DRIVER_SENSOR)), "driver sensor", DAEMON_READY_TIMEOUT_S,
                   [daemon])
        out = Stack(root, env, catalog_url, warehouse, instance, daemon)
        # Names no other stack on this machine uses (another user's test workers are also "w1", "w2"): a version
        # written by any process but this trial's workers is then seen as such by the checks.
        token = secrets.token_hex(2)
        for n in range(1, workers + 1):
            worker = start_celery_worker(f"w{n}-{token}", root / "workers", env)
            stack.callback(worker.stop)
            out.workers.append(worker)
        yield out
