"""A, Airflow 3: ``airflow backfill create --max-active-runs 2`` on a LocalExecutor (parallelism 2), metadata
in a fresh PostgreSQL database, api-server on 127.0.0.1 (tasks report through it), scheduler with
``--skip-serve-logs``. Timed from the ``backfill create`` command to the last DAG run of the range finished.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path

import sqlalchemy as sa

from ..airflow.venv import airflow_bin, ensure_venv
from ..checks import revenue_from_files
from ..measure import ProcessSampler
from ..outcome import Outcome
from ..pg import temporary_database
from ..ports import free_port
from ..services import service, wait_until
from ..workspace import REPO, Sizes, Workspace

DAG_ID = "bench_orders"
DAGS = REPO / "bench" / "airflow" / "dags"
OFFSET = "+08:00"  # Asia/Shanghai has no DST: the range is given as Shanghai midnights, not UTC ones
FINISHED = ("success", "failed")


def airflow_env(home: Path, db_url: str, port: int, out: Path, source_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        # No scheduled (cron) runs: unpausing a catchup=False DAG would otherwise start the latest interval's run
        # next to the backfill. Backfill runs are created by `backfill create` and still scheduled.
        "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": db_url.replace("postgresql://", "postgresql+psycopg2://", 1),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),  # scheduler and api-server must share it
        "PYTHONPATH": str(REPO),
        "BENCH_OUT_DIR": str(out),
        "BACKFILL_SOURCE_URL": source_url,
    }


def _airflow(env: dict, cwd: Path, log: Path, *args: str) -> None:
    with log.open("ab") as fh:
        subprocess.run([str(airflow_bin()), *args], env=env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, check=True)


def _dag_runs(engine: sa.Engine) -> list[sa.Row]:
    with engine.connect() as conn:
        return conn.execute(
            sa.text("SELECT state, data_interval_start FROM dag_run WHERE dag_id = :d AND run_type = 'backfill'"),
            {"d": DAG_ID},
        ).all()


def _scheduler_alive(engine: sa.Engine) -> bool:
    with engine.connect() as conn:
        return bool(conn.execute(sa.text(
            "SELECT 1 FROM job WHERE job_type = 'SchedulerJob' AND state = 'running' "
            "AND latest_heartbeat > now() - interval '30 seconds'")).first())


def run(ws: Workspace, sizes: Sizes, timeout: float, pg_url: str) -> Outcome:
    ensure_venv()
    base = ws.dir("A")
    home, out, logs = base / "airflow_home", base / "out", base / "logs"
    home.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with temporary_database(pg_url, "airflow_bench") as db_url:
        env = airflow_env(home, db_url, port, out, ws.source_url)
        setup_log = logs / "setup.log"
        _airflow(env, home, setup_log, "db", "migrate")
        _airflow(env, home, setup_log, "dags", "reserialize")
        _airflow(env, home, setup_log, "dags", "unpause", DAG_ID)
        engine = sa.create_engine(db_url)
        api_argv = [str(airflow_bin()), "api-server", "--host", "127.0.0.1", "--port", str(port)]
        sched_argv = [str(airflow_bin()), "scheduler", "--skip-serve-logs"]
        try:
            with service("api-server", api_argv, env, logs, home) as api, service(
                "scheduler", sched_argv, env, logs, home
            ) as scheduler:
                health = f"http://127.0.0.1:{port}/api/v2/version"
                wait_until(lambda: _http_ok(health), "airflow api-server", 180, [api])
                wait_until(lambda: _scheduler_alive(engine), "airflow scheduler", 180, [scheduler])
                database = sa.engine.make_url(db_url).database
                with ProcessSampler([api.pid, scheduler.pid], pg_database=database) as sampler:
                    started = time.time()
                    returned = _backfill_create(env, home, logs, sizes, sampler)

                    def done() -> bool:
                        runs = _dag_runs(engine)
                        return len(runs) >= sizes.days and all(r.state in FINISHED for r in runs)

                    wait_until(done, "airflow backfill", timeout, [api, scheduler], poll=1.0)
                details = _details(engine, started, returned)
        finally:
            engine.dispose()
    check = revenue_from_files(out, sizes.keys)
    return Outcome("A", "Airflow 3 backfill create", sampler.usage, details["dag_runs"], check, details)


def _backfill_create(env: dict, home: Path, logs: Path, sizes: Sizes, sampler: ProcessSampler) -> float:
    """``airflow backfill create`` (measured with ``sampler``); when it returned (epoch s)."""
    argv = [str(airflow_bin()), "backfill", "create", "--dag-id", DAG_ID,
            "--from-date", f"{sizes.first}T00:00:00{OFFSET}", "--to-date", f"{sizes.last}T00:00:00{OFFSET}",
            "--max-active-runs", str(sizes.max_active)]
    with (logs / "backfill_create.log").open("ab") as log:
        create = subprocess.Popen(argv, env=env, cwd=home, stdout=log, stderr=subprocess.STDOUT)
        sampler.add_root(create.pid)
        if create.wait() != 0:
            raise RuntimeError(f"airflow backfill create exited {create.returncode}; see {logs}")
    return time.time()


def _details(engine: sa.Engine, started: float, returned: float) -> dict:
    runs = _dag_runs(engine)
    with engine.connect() as conn:
        tasks = conn.execute(sa.text(
            "SELECT count(*), min(ti.start_date), max(ti.end_date) FROM task_instance ti JOIN dag_run r "
            "ON r.dag_id = ti.dag_id AND r.run_id = ti.run_id WHERE ti.dag_id = :d AND r.run_type = 'backfill'"),
            {"d": DAG_ID}).one()
    states: dict[str, int] = {}
    for r in runs:
        states[r.state] = states.get(r.state, 0) + 1
    return {
        "dag_runs": len(runs),
        "run_states": states,
        "task_instances": tasks[0],
        "first_task_start_s": round(tasks[1].timestamp() - started, 2) if tasks[1] else None,
        "first_task_after_return_s": round(tasks[1].timestamp() - returned, 2) if tasks[1] else None,
        "create_command_s": round(returned - started, 2),
        "last_task_end_s": round(tasks[2].timestamp() - started, 2) if tasks[2] else None,
    }


def _http_ok(url: str) -> bool:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status == 200
