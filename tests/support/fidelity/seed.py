"""The campaign's seed: ``FIDELITY_SEED`` to replay a run, else a fresh one per process (printed)."""

import os
import random


def campaign_seed():
    value = os.environ.get("FIDELITY_SEED", "").strip()
    return int(value) if value else random.SystemRandom().randrange(2**32)


SEED = campaign_seed()
# Results of this process's campaign, for the pytest summary (tests/e2e/conftest.py).
SUMMARIES = []
