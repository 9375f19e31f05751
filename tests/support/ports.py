"""Free loopback ports for the servers the tests start."""

import contextlib
import re
import socket

HOST = "127.0.0.1"


def free_ports(count=3):
    """``count`` distinct ports that were free a moment ago (all bound at once, then released)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in sockets:
            sock.bind((HOST, 0))
        return [sock.getsockname()[1] for sock in sockets]


class PortTaken(Exception):
    """Raised by a ``start`` given to :func:`with_free_ports` when one of its ports was taken before it bound it."""


PORT_TAKEN_MESSAGE = re.compile(r"already in use", re.IGNORECASE)
PORT_ATTEMPTS = 3


def with_free_ports(start, count=3, attempts=PORT_ATTEMPTS):
    """``start(*ports)`` with ``count`` free ports, again with fresh ones while it raises :class:`PortTaken`.

    A port found free is released before the server binds it, so another process (another test, another
    engineer's server on a shared machine) may take it in between: an explicit-port start retries then.
    """
    for attempt in range(1, attempts + 1):
        ports = free_ports(count)
        try:
            return start(*ports)
        except PortTaken:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")
