"""A real S3 server on loopback for the benchmarks: ``moto_server`` as its own process, always stopped.

The bench's own starter rather than ``tests/s3.py``'s (bench code does not import the test suite): the same
server, started like every other service of the benchmark (``services.service``: its own process group, its log
under the workspace). Clients reach it only through the standard AWS variables, as a deployment's do.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from s3fs import S3FileSystem

from .ports import free_port
from .services import service, wait_until

BUCKET = "backfill-bench"
READY_TIMEOUT_S = 30.0
# What a deployment sets; moto accepts any credentials.
AWS_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    pid: int | None = None  # moto_server's process (its own session), for a benchmark that counts its CPU

    @property
    def environment(self) -> dict[str, str]:
        return {**AWS_CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint}

    def root(self, prefix: str) -> str:
        return f"s3://{BUCKET}/{prefix}"


def _answers(endpoint: str) -> bool:
    urllib.request.urlopen(f"{endpoint}/", timeout=1).read()
    return True


@contextmanager
def s3_server(log_dir: Path) -> Iterator[S3Server]:
    """``moto_server`` on a free 127.0.0.1 port with an empty bucket ``BUCKET``; stopped on exit."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    binary = Path(sys.executable).parent / "moto_server"
    with service("moto_server", [str(binary), "-H", "127.0.0.1", "-p", str(port)], os.environ, log_dir) as proc:
        wait_until(lambda: _answers(endpoint), "moto_server", READY_TIMEOUT_S, [proc], poll=0.1)
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT"), timeout=10).read()
        yield S3Server(endpoint, proc.pid)


@contextmanager
def aws_environment(server: S3Server) -> Iterator[None]:
    """The standard AWS variables pointing at ``server`` for this process, restored after.

    s3fs keeps one filesystem instance per set of arguments and reads the endpoint from the environment only when
    it makes one, so the cache is cleared on the way in (an instance made earlier in this process would talk to
    another server) and on the way out (ours would outlive its server).
    """
    saved = {k: os.environ.get(k) for k in (*server.environment, "AWS_PROFILE")}
    os.environ.update(server.environment)
    os.environ.pop("AWS_PROFILE", None)
    S3FileSystem.clear_instance_cache()
    try:
        yield
    finally:
        S3FileSystem.clear_instance_cache()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
