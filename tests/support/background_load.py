"""Valid requests sent in a loop from several clients while a test breaks the server, every outcome recorded.

Each client thread sends requests of the soak's ``valid`` kind (``benchmarks/soak_requests.py``) over
one transport -- HTTP JSON, HTTP binary or gRPC, each on a keep-alive connection or channel that is
reopened after a failure -- and records what came back with its send and answer times. Afterwards
:meth:`BackgroundLoad.wrong_answers` compares every answer with ``pyfunc.predict`` of the same
request, rebuilt from its index.
"""

import dataclasses
import threading
import time

import numpy as np

from benchmarks.soak_client import Client
from benchmarks.soak_requests import ANSWERED, TRANSPORTS, VALID, Request


@dataclasses.dataclass(frozen=True)
class Timed:
    sent: float  # time.monotonic()
    answered: float
    outcome: object  # benchmarks.soak_client.Outcome


class BackgroundLoad:
    """``with BackgroundLoad(http_port, grpc_url, layout) as load:`` -- clients run until the block ends."""

    PAUSE_AFTER_ERROR_S = 0.05

    def __init__(self, http_port, grpc_url, layout, *, transports=TRANSPORTS, seed=0):
        self.http_port, self.grpc_url, self.layout = http_port, grpc_url, layout
        self.transports, self.seed = tuple(transports), seed
        self.records: list[Timed] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []

    def request(self, index):
        """Request ``index`` (client ``index % clients``); the same one every time it is asked for."""
        transport = self.transports[index % len(self.transports)]
        rng = np.random.default_rng([self.seed, index])
        return Request(index, VALID.name, transport, VALID.expected, **VALID.build(rng, self.layout, transport))

    def __enter__(self):
        for number in range(len(self.transports)):
            thread = threading.Thread(target=self._client, args=(number,), daemon=True, name=f"load-{number}")
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=400)
        assert not any(thread.is_alive() for thread in self._threads), "a load client did not stop"

    def _client(self, number):
        client = Client(self.http_port, self.grpc_url, self.layout.model_name)
        index = number
        try:
            while not self._stop.is_set():
                request = self.request(index)
                sent = time.monotonic()
                outcome = client.send(request)
                with self._lock:
                    self.records.append(Timed(sent, time.monotonic(), outcome))
                if outcome.answer_class != ANSWERED:
                    self._stop.wait(self.PAUSE_AFTER_ERROR_S)
                index += len(self.transports)
        finally:
            client.close()

    # -- reading what happened ---------------------------------------------------------------------------------

    def snapshot(self):
        with self._lock:
            return list(self.records)

    def wait_for_answers(self, count, *, after=0.0, timeout=120.0):
        """Block until ``count`` requests sent after ``after`` were answered (200 / OK)."""
        deadline = time.monotonic() + timeout
        while sum(1 for r in self.snapshot() if r.sent >= after and r.outcome.answer_class == ANSWERED) < count:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"fewer than {count} answers within {timeout}s; last outcomes: "
                    f"{[r.outcome.as_dict() for r in self.snapshot()[-5:]]}"
                )
            time.sleep(0.05)

    def wait_for_failures(self, count, *, sent_after=0.0, timeout=120.0):
        """Block until ``count`` requests sent after ``sent_after`` got no answer; their ``{(status, message): n}``."""
        deadline = time.monotonic() + timeout
        while sum((found := self.failures(sent_after=sent_after)).values()) < count:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"fewer than {count} failed requests within {timeout}s; last outcomes: "
                    f"{[r.outcome.as_dict() for r in self.snapshot()[-5:]]}"
                )
            time.sleep(0.05)
        return found

    def wrong_answers(self, oracle):
        """Answers that differ from ``pyfunc.predict`` of their request (``benchmarks.soak.Oracle``)."""
        wrong = []
        for record in self.snapshot():
            outcome = record.outcome
            if outcome.answer_class == ANSWERED:
                equal, difference = oracle.differences(self.request(outcome.index).frame, outcome.outputs)
                if not equal:
                    wrong.append({**outcome.as_dict(), "difference": difference})
        return wrong

    def failures(self, *, sent_after=0.0, sent_before=float("inf"), answered_before=float("inf")):
        """``{(status, message): count}`` of the requests sent in that window (and, with ``answered_before``,
        whose outcome came back before that time) that got no answer.

        A request's send time is taken just before the client writes it: on a loaded machine the thread may
        be paused in between, so "the outcome came back before the fault" is the safe way to pick requests
        the fault cannot have touched.
        """
        found = {}
        for record in self.snapshot():
            if (
                sent_after <= record.sent < sent_before
                and record.answered < answered_before
                and record.outcome.answer_class != ANSWERED
            ):
                key = (record.outcome.status, record.outcome.message)
                found[key] = found.get(key, 0) + 1
        return found
