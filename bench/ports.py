"""A free TCP port on the loopback interface for a webserver or API server of one contender."""

import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
