"""A real S3-compatible server on 127.0.0.1 for end-to-end tests: moto's server mode (``moto[server]``).

``running_s3_server(log_dir)`` starts ``moto_server -H 127.0.0.1 -p PORT`` as its own process (never an
in-process mock), waits until it answers, creates nothing, and always stops it (SIGTERM to its process
group, SIGKILL after a grace period). The server accepts any key; the tests use fixed dummy ones so that
they can prove no output carries them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.ports import HOST, free_ports

ACCESS_KEY_ID = "AKIAMLFLOWTRITONTEST"
SECRET_ACCESS_KEY = "mlflow-triton-test-secret-0123456789abcdef"
REGION = "us-east-1"
STARTUP_TIMEOUT_S = 120.0
MOTO_SERVER = Path(sys.executable).with_name("moto_server")


@dataclasses.dataclass(frozen=True)
class S3Server:
    endpoint_url: str
    port: int
    log_path: Path

    def credentials(self) -> dict[str, str]:
        """The standard AWS variables MLflow, boto3 and Triton read, pointed at this server."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
            "AWS_DEFAULT_REGION": REGION,
            "MLFLOW_S3_ENDPOINT_URL": self.endpoint_url,
        }

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY_ID,
            aws_secret_access_key=SECRET_ACCESS_KEY,
            region_name=REGION,
        )

    def objects(self, bucket: str) -> dict[str, str]:
        """``{key: ETag}`` of every object in ``bucket``."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return {item["Key"]: item["ETag"] for page in pages for item in page.get("Contents", [])}


@contextlib.contextmanager
def running_s3_server(log_dir):
    """Start moto's S3 server on a free loopback port; yield an :class:`S3Server`; always stop it."""
    (port,) = free_ports(1)
    log_path = Path(log_dir) / "moto-server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(MOTO_SERVER), "-H", HOST, "-p", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_answering(process, f"http://{HOST}:{port}", log_path)
        yield S3Server(endpoint_url=f"http://{HOST}:{port}", port=port, log_path=log_path)
    finally:
        _stop(process)


def _wait_until_answering(process, url, log_path):
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with status {process.returncode}: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/moto-api/", timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"moto_server at {url} did not answer within {STARTUP_TIMEOUT_S:.0f} s")


def _stop(process):
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signum)
        try:
            process.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue
