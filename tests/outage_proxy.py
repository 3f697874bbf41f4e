"""A loopback TCP proxy whose listening port can be taken down and brought back: an outage of the server behind
it without losing the server's state (moto keeps every object in memory; killing it would lose the bucket).

    python -m tests.outage_proxy UPSTREAM_HOST UPSTREAM_PORT

runs the proxy as its own process, single-threaded (one ``selectors`` loop, non-blocking sockets). It prints
``ready <port>`` and then obeys one command per line on stdin, answering each once it holds:

- ``down``: the listening socket is closed, so a new connection is refused (ECONNREFUSED), and every open
  connection is reset (RST both ways, so a client mid-request sees ECONNRESET). The port stays reserved by a
  bound, non-listening socket, so nothing else can take it while it is down.
- ``up``: that same socket listens again: clients reconnect to the same endpoint.

EOF on stdin (the test process went away) ends the proxy. ``OutageProxy`` is the test side of it.
"""

from __future__ import annotations

import os
import selectors
import socket
import struct
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

CHUNK = 65536
# Stop reading a side while this much of its data still waits to be written to the other side.
HIGH_WATER = 1 << 20
ANSWER_TIMEOUT_SECONDS = 10.0


class _Pipe:
    """One proxied connection: the client's socket, the upstream's, and what each still owes the other."""

    def __init__(self, client: socket.socket, upstream: socket.socket):
        self.sockets = (client, upstream)
        self.pending = {client: bytearray(), upstream: bytearray()}  # bytes waiting to be written TO that socket
        self.ended: set[socket.socket] = set()  # sides that sent EOF
        self.shut: set[socket.socket] = set()  # sides we passed the other side's EOF on to

    def peer(self, sock: socket.socket) -> socket.socket:
        client, upstream = self.sockets
        return upstream if sock is client else client


class _Proxy:
    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.selector = selectors.DefaultSelector()
        self.pipes: dict[socket.socket, _Pipe] = {}
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listening = False
        self.resets = 0

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]

    def listen(self) -> None:
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.listening = True

    def go_down(self) -> None:
        """Refuse new connections and reset the open ones; keep the port bound so that ``up`` gets it back."""
        port = self.port
        self.selector.unregister(self.listener)
        self.listener.close()  # a listening socket cannot stop listening: a fresh bound one holds the port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listening = False
        for sock in list(self.pipes):
            self._close(sock, reset=True)

    def _accept(self) -> None:
        try:
            client, _ = self.listener.accept()
        except BlockingIOError:
            return
        try:
            # Loopback: the connect completes at once (or is refused, which the client then sees as a reset).
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            _reset(client)
            self.resets += 1
            return
        pipe = _Pipe(client, upstream)
        for sock in pipe.sockets:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.pipes[sock] = pipe
            self.selector.register(sock, selectors.EVENT_READ, "data")

    def _watch(self, sock: socket.socket) -> None:
        """Read a side unless it ended or its peer is backed up; write it while it is owed bytes."""
        pipe = self.pipes[sock]
        events = 0
        if sock not in pipe.ended and len(pipe.pending[pipe.peer(sock)]) < HIGH_WATER:
            events |= selectors.EVENT_READ
        if pipe.pending[sock]:
            events |= selectors.EVENT_WRITE
        try:
            registered = self.selector.get_key(sock).events
        except KeyError:
            registered = 0
        if events == registered:
            return
        if not events:  # an ended side would read as ready forever: watch it again when it is owed bytes
            self.selector.unregister(sock)
        elif not registered:
            self.selector.register(sock, events, "data")
        else:
            self.selector.modify(sock, events, "data")

    def _on_data(self, sock: socket.socket, mask: int) -> None:
        pipe = self.pipes[sock]
        peer = pipe.peer(sock)
        try:
            if mask & selectors.EVENT_READ:
                data = sock.recv(CHUNK)
                if data:
                    pipe.pending[peer] += data
                else:
                    pipe.ended.add(sock)
            if mask & selectors.EVENT_WRITE and pipe.pending[sock]:
                sent = sock.send(pipe.pending[sock])
                del pipe.pending[sock][:sent]
            for side in pipe.sockets:  # pass an EOF on once everything before it was delivered
                if pipe.peer(side) in pipe.ended and not pipe.pending[side] and side not in pipe.shut:
                    pipe.shut.add(side)
                    side.shutdown(socket.SHUT_WR)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._close(sock, reset=True)
            return
        if len(pipe.ended) == 2 and not any(pipe.pending.values()):
            self._close(sock, reset=False)
            return
        for side in pipe.sockets:
            self._watch(side)

    def _close(self, sock: socket.socket, reset: bool) -> None:
        pipe = self.pipes.get(sock)
        if pipe is None:
            return
        for side in pipe.sockets:
            self.pipes.pop(side, None)
            try:
                self.selector.unregister(side)
            except (KeyError, ValueError):
                pass
            if reset:
                _reset(side)
            else:
                side.close()
        if reset:
            self.resets += 1

    def serve(self, commands_fd: int) -> None:
        self.selector.register(commands_fd, selectors.EVENT_READ, "command")
        self.listen()
        _say(f"ready {self.port}")
        received = b""
        while True:
            for key, mask in self.selector.select(timeout=1.0):
                if key.data == "command":
                    chunk = os.read(commands_fd, 4096)
                    if not chunk:
                        return  # the test process is gone
                    received += chunk
                    while b"\n" in received:
                        line, received = received.split(b"\n", 1)
                        self._command(line.decode().strip())
                elif key.data == "accept":
                    self._accept()
                elif key.fileobj in self.pipes:  # not closed by an earlier event of this round
                    self._on_data(key.fileobj, mask)

    def _command(self, command: str) -> None:
        if command == "down":
            if self.listening:
                self.go_down()
            _say(f"down resets={self.resets}")
        elif command == "up":
            if not self.listening:
                self.listen()
            _say("up")
        else:
            _say(f"error unknown command {command!r}")


def _reset(sock: socket.socket) -> None:
    """Close with RST instead of FIN: the peer sees ECONNRESET, as when a server or a network path dies."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


@dataclass
class OutageProxy:
    """The running proxy process, seen from the test: ``endpoint`` to give clients, ``down()`` / ``up()``."""

    endpoint: str
    process: subprocess.Popen
    log: Path

    @classmethod
    def start(cls, upstream_host: str, upstream_port: int, log_dir: Path) -> "OutageProxy":
        log = log_dir / f"outage_proxy_{upstream_port}.log"
        with log.open("ab") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.outage_proxy", upstream_host, str(upstream_port)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1,
                cwd=str(Path(__file__).resolve().parent.parent),
            )
        proxy = cls("", process, log)
        answer = proxy._answer()
        if not answer.startswith("ready "):
            proxy.stop()
            raise RuntimeError(f"outage proxy did not start: {answer!r}\n{log.read_text()[-2000:]}")
        proxy.endpoint = f"http://127.0.0.1:{int(answer.split()[1])}"
        return proxy

    def down(self) -> int:
        """Refuse and reset from now on; returns how many connections the proxy has reset so far."""
        answer = self._command("down")
        return int(answer.split("resets=")[1])

    def up(self) -> None:
        self._command("up")

    @contextmanager
    def outage(self) -> Iterator[None]:
        self.down()
        try:
            yield
        finally:
            self.up()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()  # EOF: the proxy ends itself
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process.stdout.close()

    def _command(self, command: str) -> str:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer = self._answer()
        if not answer.startswith(command):
            raise RuntimeError(f"outage proxy answered {answer!r} to {command!r}\n{self.log.read_text()[-2000:]}")
        return answer

    def _answer(self) -> str:
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + ANSWER_TIMEOUT_SECONDS
        while not selector.select(timeout=max(0.0, deadline - time.monotonic())):
            if time.monotonic() >= deadline or self.process.poll() is not None:
                raise RuntimeError(f"outage proxy did not answer (exit {self.process.poll()})\n"
                                   f"{self.log.read_text()[-2000:]}")
        return self.process.stdout.readline().strip()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.outage_proxy UPSTREAM_HOST UPSTREAM_PORT", file=sys.stderr)
        return 2
    _Proxy((argv[0], int(argv[1]))).serve(sys.stdin.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
