"""Hypothesis settings profiles; ``HYPOTHESIS_PROFILE`` picks one (default ``ci``)."""

import os

from hypothesis import settings

settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("thorough", max_examples=2000, deadline=None)
# Mutation runs (tests/mutation/run.sh): the same few examples for every mutant, so outcomes compare.
settings.register_profile("mutation", max_examples=25, deadline=None, derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
