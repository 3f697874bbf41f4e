"""`make demo-distributed`: the October story (`backfill-assets demo`) with its steps on two Celery workers.

On this one machine it brings up what a cluster would have: an S3 server on loopback (moto in server mode, the
bucket `backfill-test`), a fresh RabbitMQ virtual host, three fresh PostgreSQL databases (Dagster's storage, the
catalog, the orders source) and two `dagster-celery` workers, each with its own DAGSTER_HOME and working
directory, started with the command deploy/celery/README.md gives. The demo's daemon serves
`backfill_assets.examples.orders.on_celery`; its output ends with which worker ran which day. Everything it
started is stopped at the end; the databases are kept for a look (`DAGSTER_HOME=.dagster_home_distributed`).

The S3 server and the workers are started by the helpers the tests use (tests/s3.py, tests/celery_stack.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # the test helpers live beside the package, not in it

import sqlalchemy as sa  # noqa: E402

from backfill_assets.engine.model.settings import code_version  # noqa: E402
from tests.celery_stack import CELERY_DEPLOY_DIR, ENV_BROKER, rabbitmq_vhost, start_workers, venv_bin  # noqa: E402
from tests.s3 import start_s3_server  # noqa: E402

PG_ADMIN_URL = os.environ.get("BACKFILL_DEMO_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
DATABASES = {"DAGSTER_PG_URL": "backfill_dist_dagster", "BACKFILL_CATALOG_URL": "backfill_dist_catalog",
             "BACKFILL_SOURCE_URL": "backfill_dist_source"}
BUCKET_ROOT = "s3://backfill-test/warehouse"
HOME = REPO / ".dagster_home_distributed"
WORKERS = ("w1", "w2")


def fresh_databases() -> dict[str, str]:
    """Drop and create the demo's databases: the S3 server starts empty, so a catalog kept from an earlier demo
    would point at objects that no longer exist."""
    engine = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    urls = {}
    with engine.connect() as conn:
        for variable, name in DATABASES.items():
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
            urls[variable] = engine.url.set(database=name).render_as_string(hide_password=False)
    engine.dispose()
    return urls


def main() -> int:
    shutil.rmtree(HOME, ignore_errors=True)
    HOME.mkdir(parents=True)
    shutil.copy(CELERY_DEPLOY_DIR / "dagster.yaml", HOME / "dagster.yaml")
    (HOME / "s3").mkdir()
    with ExitStack() as stack:
        s3 = start_s3_server(HOME / "s3")
        stack.callback(s3.stop)
        broker = stack.enter_context(rabbitmq_vhost("backfill-demo"))
        env = {
            **os.environ,
            **s3.environment,
            **fresh_databases(),
            "DAGSTER_HOME": str(HOME),
            "BACKFILL_WAREHOUSE": BUCKET_ROOT,
            ENV_BROKER: broker,
            # One code version for the daemon, the run processes and both workers: the request freezes it.
            "BACKFILL_CODE_VERSION": code_version(),
        }
        print(f"S3 server {s3.endpoint} ({BUCKET_ROOT}), broker {broker}, PostgreSQL {', '.join(DATABASES.values())}")
        for name, worker in start_workers({name: env for name in WORKERS}, HOME / "workers").items():
            stack.callback(worker.stop)
            print(f"celery worker {name}: pid {worker.process.pid}, DAGSTER_HOME {worker.home}")
        demo = subprocess.run([venv_bin("backfill-assets"), "--home", str(HOME), "demo", "--executor", "celery"],
                              env=env, cwd=REPO)
        return demo.returncode


if __name__ == "__main__":
    sys.exit(main())
