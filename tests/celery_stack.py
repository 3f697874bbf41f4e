"""Steps on Celery workers, for the tests and ``make demo-distributed``.

A RabbitMQ virtual host per stack (dagster-celery's queue is always named ``dagster``: two stacks on one broker
vhost would run each other's steps), and ``dagster-celery worker start`` processes exactly as deploy/celery says,
each with its own DAGSTER_HOME and working directory: the workers share no folder with each other or with the
daemon, only the services (PostgreSQL, S3, the broker).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from backfill_assets.engine.model.settings import ENV_WORKER_NAME, PACKAGE_DIR

CELERY_DEPLOY_DIR = PACKAGE_DIR.parent / "deploy" / "celery"
CODE_LOCATION_MODULE = "backfill_assets.examples.orders.on_celery"
ENV_BROKER = "BACKFILL_CELERY_BROKER"
BROKER_HOST = "127.0.0.1:5672"
WORKER_READY_TIMEOUT_SECONDS = 60.0
WORKER_STOP_TIMEOUT_SECONDS = 10.0
# One step at a time per worker, in the worker's own process: a SIGKILL of the worker is the loss of the machine
# running the step, and the broker returns the step's unacknowledged message at once (the connection closed).
WORKER_ARGS = ("--pool=solo", "--without-gossip", "--without-mingle")


def _rabbitmqctl(*args: str) -> None:
    done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")


@contextmanager
def rabbitmq_vhost(prefix: str = "backfill-test") -> Iterator[str]:
    """A fresh RabbitMQ virtual host for guest, deleted afterwards; yields its broker URL."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    _rabbitmqctl("add_vhost", name)
    try:
        _rabbitmqctl("set_permissions", "-p", name, "guest", ".*", ".*", ".*")
        yield f"pyamqp://guest:guest@{BROKER_HOST}/{name}"
    finally:
        _rabbitmqctl("delete_vhost", name)


def venv_bin(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


@dataclass
class CeleryWorker:
    """One ``dagster-celery worker start`` process group (the CLI and the celery worker it runs)."""

    name: str
    home: Path
    process: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole worker, as a lost machine: no cleanup, no acknowledgement."""
        self._signal_group(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """Celery's warm shutdown (SIGTERM): the current step finishes first."""
        if self.alive():
            self._signal_group(signal.SIGTERM)
            try:
                self.process.wait(timeout=WORKER_STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        self._signal_group(signal.SIGKILL)
        if self.alive():
            self.process.wait(timeout=10)

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)  # its own session: the CLI, celery and nothing else
        except (ProcessLookupError, PermissionError):
            pass


def launch_worker(name: str, root: Path, env: Mapping[str, str]) -> CeleryWorker:
    """Start a Celery worker named ``name`` with its own DAGSTER_HOME under ``root`` (a copy of deploy/celery's
    dagster.yaml and celery.yaml, as a machine would have) and its own working directory; not yet ready."""
    home = root / name
    cwd = home / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    for config in ("dagster.yaml", "celery.yaml"):
        shutil.copy(CELERY_DEPLOY_DIR / config, home / config)
    log = home / "worker.log"
    bin_dir = str(Path(sys.executable).parent)
    worker_env = {
        **env,
        "DAGSTER_HOME": str(home),
        ENV_WORKER_NAME: name,
        # dagster-celery starts `celery` by name: the virtualenv's, also when the caller's PATH lacks it.
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
    }
    command = [
        venv_bin("dagster-celery"), "worker", "start", "-A", "dagster_celery.app", "-y", str(home / "celery.yaml"),
        "-n", name, "--", *WORKER_ARGS,
    ]
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, cwd=cwd, env=worker_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return CeleryWorker(name, home, process, log)


def wait_until_ready(worker: CeleryWorker, deadline: float) -> None:
    """Until the worker logs that it is consuming (``<name>@<host> ready.``); stopped and raised otherwise."""
    while time.monotonic() < deadline:
        if not worker.alive():
            raise RuntimeError(f"celery worker {worker.name} exited with {worker.process.returncode}:\n"
                               f"{worker.log_tail()}")
        text = worker.log.read_text(errors="replace") if worker.log.exists() else ""
        if f"{worker.name}@" in text and " ready." in text:
            return
        time.sleep(0.2)
    worker.stop()
    raise RuntimeError(f"celery worker {worker.name} not ready within {WORKER_READY_TIMEOUT_SECONDS} s:\n"
                       f"{worker.log_tail()}")


def start_workers(envs: Mapping[str, Mapping[str, str]], root: Path) -> dict[str, CeleryWorker]:
    """Ready workers, one per name of ``envs`` (each with its environment), started side by side."""
    workers = {name: launch_worker(name, root, env) for name, env in envs.items()}
    deadline = time.monotonic() + WORKER_READY_TIMEOUT_SECONDS
    try:
        for worker in workers.values():
            wait_until_ready(worker, deadline)
    except BaseException:
        for worker in workers.values():
            worker.stop()
        raise
    return workers


def start_worker(name: str, root: Path, env: Mapping[str, str]) -> CeleryWorker:
    """One ready worker (``start_workers`` for several side by side)."""
    return start_workers({name: env}, root)[name]
