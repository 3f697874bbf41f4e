"""The Celery deployment's settings: the executor of ``on_celery`` and the workers' deploy/celery/celery.yaml
must agree (a worker acknowledging early would lose the step of a killed worker), and the executor parameter of
``backfill_definitions`` reaches exactly the data jobs."""

from __future__ import annotations

import dagster as dg
import pytest
import yaml
from dagster_celery.cli import get_validated_config

from backfill_assets import InvalidInput, backfill_definitions
from backfill_assets.examples.orders import on_celery
from backfill_assets.examples.orders.definitions import orders_definitions
from backfill_assets.integration.assets.chunks import CHUNK_JOB
from backfill_assets.integration.jobs import BACKFILL_JOB, PRODUCTION_JOB
from backfill_assets.integration.request_jobs import REPORT_JOB, REQUEST_JOB
from tests.celery_stack import CELERY_DEPLOY_DIR, ENV_BROKER

DATA_JOBS = (PRODUCTION_JOB, BACKFILL_JOB, CHUNK_JOB)
CONTROL_JOBS = (REQUEST_JOB, REPORT_JOB)


def test_the_workers_yaml_is_the_executors_settings():
    workers = yaml.safe_load((CELERY_DEPLOY_DIR / "celery.yaml").read_text())["execution"]["config"]
    assert workers == on_celery.CELERY_SETTINGS


def test_the_workers_yaml_validates_as_dagster_celery_reads_it(monkeypatch):
    monkeypatch.setenv(ENV_BROKER, "pyamqp://guest:guest@127.0.0.1:5672/some-vhost")
    config = get_validated_config(str(CELERY_DEPLOY_DIR / "celery.yaml"))
    assert config["broker"] == "pyamqp://guest:guest@127.0.0.1:5672/some-vhost"
    assert config["config_source"]["task_acks_late"] is True
    assert config["config_source"]["task_reject_on_worker_lost"] is True


def test_the_executor_runs_the_data_jobs_and_the_launchpad_jobs_stay_in_process():
    defs = on_celery.defs
    for job in DATA_JOBS:
        assert defs.resolve_job_def(job).executor_def.name == "celery_workers", job
    for job in CONTROL_JOBS:
        assert defs.resolve_job_def(job).executor_def is dg.in_process_executor, job
    default = orders_definitions()
    for job in CONTROL_JOBS:
        assert default.resolve_job_def(job).executor_def is dg.in_process_executor, job
    # The data jobs' executor is Dagster's, wrapped to tick a request's driver when its run ends
    # (integration/runs/run_end_tick.py): the same name and config, so the jobs' snapshots are unchanged.
    for job in DATA_JOBS:
        executor = default.resolve_job_def(job).executor_def
        assert executor.name == dg.in_process_executor.name, job
        assert executor.config_schema is dg.in_process_executor.config_schema, job


def test_an_executor_that_is_not_an_executor_definition_is_refused():
    from backfill_assets.examples.orders.definitions import raw_orders

    with pytest.raises(InvalidInput, match="executor must be a Dagster ExecutorDefinition"):
        backfill_definitions(assets=[raw_orders], resources={"orders_source": object()}, executor="celery")
