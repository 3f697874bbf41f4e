"""A real S3 server on loopback for the tests: ``moto_server`` (moto in server mode) as its own process.

Nothing mocks boto or s3fs in-process: the warehouse talks HTTP to a server that the session starts and stops,
configured only through the standard AWS variables (``AWS_ENDPOINT_URL`` and credentials), as a deployment is.
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

BUCKET = "backfill-test"
READY_TIMEOUT_SECONDS = 30.0
# What a deployment sets; moto accepts any credentials.
AWS_VARIABLES = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


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
        return {**AWS_VARIABLES, "AWS_ENDPOINT_URL": self.endpoint}

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
