"""A Triton installation on disk that unit tests name but never really start."""


def fake_triton(root, script="exit 99"):
    """``(binary, backends)`` under ``root/fake-triton``: an executable ``tritonserver`` shell script
    running ``script``, and a backend directory holding an empty ``python`` backend."""
    binary = root / "fake-triton" / "bin" / "tritonserver"
    binary.parent.mkdir(parents=True)
    binary.write_text(f"#!/bin/sh\n{script}\n")
    binary.chmod(0o755)
    backends = root / "fake-triton" / "backends"
    (backends / "python").mkdir(parents=True)
    return binary, backends
