"""A real S3 server on loopback for the tests: ``moto_server`` (moto in server mode) as its own process.

Nothing mocks boto or s3fs in-process: the warehouse talks HTTP to a server that the session starts and stops,
configured only through the standard AWS variables (``AWS_ENDPOINT_URL`` and credentials), as a deployment is.

``S3Server.outage_proxy`` puts a proxy (tests/outage_proxy.py, its own process) in front of the server whose
endpoint can be taken down and brought back: an S3 outage that keeps the bucket, which moto holds in memory.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tests.outage_proxy import OutageProxy

BUCKET = "backfill-test"
READY_TIMEOUT_SECONDS = 30.0
# What a deployment sets; moto accepts any credentials.
AWS_VARIABLES = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
# What the README recommends for a deployment (botocore's "standard" mode: 3 attempts with a bounded, jittered
# backoff), so that a call to an endpoint that is down fails in seconds and the step's RetryPolicy takes over.
# botocore's default "legacy" mode makes 5 attempts: up to ~10 s per call and ~20 s for a mkdir against a
# refused endpoint, before the step even sees the error.
RETRY_VARIABLES = {"AWS_RETRY_MODE": "standard", "AWS_MAX_ATTEMPTS": "3"}


def environment_for(endpoint: str) -> dict[str, str]:
    """The standard AWS variables that point S3 clients at ``endpoint``."""
    return {**AWS_VARIABLES, "AWS_ENDPOINT_URL": endpoint}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class S3Server:
    """A running ``moto_server`` on 127.0.0.1 and the environment that points S3 clients at it."""

    endpoint: str
    process: subprocess.Popen
    log: Path
    _prefixes: list[str] = field(default_factory=list)

    @property
    def environment(self) -> dict[str, str]:
        return environment_for(self.endpoint)

    def outage_proxy(self, log_dir: Path) -> OutageProxy:
        """A proxy in front of this server whose endpoint can go down and come back with the bucket intact."""
        address = urlsplit(self.endpoint)
        return OutageProxy.start(address.hostname, address.port, log_dir)

    def new_root(self) -> str:
        """A fresh, empty warehouse root in the test bucket."""
        prefix = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"
        self._prefixes.append(prefix)
        return prefix

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_s3_server(log_dir: Path) -> S3Server:
    """Start ``moto_server`` on a free loopback port, wait until it answers, create the test bucket."""
    port = _free_port()
    log = log_dir / "moto_server.log"
    binary = Path(sys.executable).parent / "moto_server"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(binary), "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=subprocess.STDOUT
        )
    server = S3Server(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode}:\n{log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"{server.endpoint}/", timeout=1).read()
            break
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"moto_server did not answer within {READY_TIMEOUT_SECONDS} s") from None
            time.sleep(0.1)
    request = urllib.request.Request(f"{server.endpoint}/{BUCKET}", method="PUT")
    urllib.request.urlopen(request, timeout=10).read()
    return server


def set_environment(monkeypatch, server: S3Server) -> None:
    for name, value in server.environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def forget_s3_clients() -> None:
    """Drop this process's cached S3 file systems. fsspec caches one per set of arguments, and its client reads
    ``AWS_ENDPOINT_URL`` once, when first used: a cached one keeps talking to the endpoint of its time (a proxy
    that has since stopped, or the server behind a proxy a test means to go through)."""
    from s3fs import S3FileSystem

    S3FileSystem.clear_instance_cache()
