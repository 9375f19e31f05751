"""Which Triton processes are alive: tests assert that none outlives the command that started it."""

import signal
import subprocess
from pathlib import Path

TRITON_PROGRAMS = ("tritonserver", "triton_python_backend_stub")


def command_lines():
    """``{pid: command line}`` of every live, non-zombie process."""
    lines = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if state != "Z" and cmdline:
            lines[int(entry.name)] = cmdline
    return lines


def triton_processes_under(directory):
    """PIDs of live ``tritonserver`` / Python-backend stub processes whose command line mentions ``directory``.

    The server's command line names its model repository, each stub's names its model directory.
    """
    return sorted(
        pid
        for pid, line in command_lines().items()
        if any(program in line for program in TRITON_PROGRAMS) and str(directory) in line
    )


def processes_mentioning(text):
    """PIDs of live processes whose command line contains ``text`` (e.g. a pip building into a cache)."""
    return sorted(pid for pid, line in command_lines().items() if str(text) in line)


class LineReader:
    """Collects the lines of a child's output stream in a thread, so a test can wait for one with a deadline."""

    def __init__(self, stream):
        import threading

        self.lines = []
        self._changed = threading.Condition()
        self._done = False
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._done = True
            self._changed.notify_all()

    def wait_for(self, text, timeout):
        """The first line containing ``text``; AssertionError with everything read when it does not come."""
        import time

        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = next((line for line in self.lines if text in line), None)
                if found is not None:
                    return found
                remaining = deadline - time.monotonic()
                if self._done or remaining <= 0:
                    raise AssertionError(f"no line with {text!r} within {timeout}s; output:\n" + "\n".join(self.lines))
                self._changed.wait(remaining)

    def text(self, join_timeout=10):
        self._thread.join(join_timeout)
        return "\n".join(self.lines)


def listening_sockets(pid):
    """``{(address, port)}`` of the TCP sockets process ``pid`` listens on (IPv4 and IPv6; IPv4-mapped IPv6
    addresses are given as IPv4)."""
    import os

    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                address, port = local.split(":")
                found.add((_address(address, width), int(port, 16)))
    return found


def _address(hex_address, width):
    import ipaddress
    import socket
    import struct

    if width == 8:
        return socket.inet_ntoa(struct.pack("<I", int(hex_address, 16)))
    words = [int(hex_address[i : i + 8], 16) for i in range(0, 32, 8)]
    address = ipaddress.IPv6Address(struct.pack("<4I", *words))
    return str(address.ipv4_mapped or address)  # gRPC listens on an IPv6 socket bound to ::ffff:127.0.0.1


def stop_politely(process):
    """After a failed assertion: Ctrl-C first, so the command stops its server; SIGKILL only as a last resort."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
