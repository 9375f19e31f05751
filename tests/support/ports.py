"""Free loopback ports for the servers the tests start."""

import contextlib
import socket

HOST = "127.0.0.1"


def free_ports(count=3):
    """``count`` distinct ports that were free a moment ago (all bound at once, then released)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in sockets:
            sock.bind((HOST, 0))
        return [sock.getsockname()[1] for sock in sockets]
