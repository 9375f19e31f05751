"""Which Triton processes are alive: tests assert that none outlives the command that started it."""

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
    return sorted(pid for pid, line in command_lines().items()
                  if any(program in line for program in TRITON_PROGRAMS) and str(directory) in line)


def processes_mentioning(text):
    """PIDs of live processes whose command line contains ``text`` (e.g. a pip building into a cache)."""
    return sorted(pid for pid, line in command_lines().items() if str(text) in line)
