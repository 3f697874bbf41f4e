"""The orders code location with its steps on Celery workers (deploy/celery, `make demo-distributed`).

``dagster-daemon run -m backfill_assets.examples.orders.on_celery``; the workers start with
``dagster-celery worker start -A dagster_celery.app -y deploy/celery/celery.yaml`` and import the same package.
Dagster's storage, the catalog, the source and the warehouse must then be reachable from every worker
(PostgreSQL and S3: deploy/celery/README.md); nothing is passed between steps through a local folder.
"""

from __future__ import annotations

from dagster_celery import celery_executor

from .definitions import orders_definitions
from .source import seed  # noqa: F401 - `backfill-assets seed` fills this demo's source

# The executor's settings, the same block as deploy/celery/celery.yaml's `execution.config` (the workers read that
# file; tests/integration/test_celery_settings.py keeps the two equal). The broker comes from the environment.
CELERY_SETTINGS = {
    "broker": {"env": "BACKFILL_CELERY_BROKER"},
    "backend": "rpc://",
    "config_source": {
        # A step's message is acknowledged when the step has ended, not when a worker takes it: the message of a
        # worker that dies mid-step goes back to the queue and another worker runs the step. The catalog numbers
        # that run a new attempt of the same logical run; the dead attempt's files are never published.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # One step at a time per worker process, none reserved ahead: a reserved message would wait for a busy
        # worker while another is idle.
        "worker_prefetch_multiplier": 1,
    },
}

celery_workers = celery_executor.configured(CELERY_SETTINGS, name="celery_workers")

defs = orders_definitions(executor=celery_workers)
