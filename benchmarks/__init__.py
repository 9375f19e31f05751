"""Benchmarks: served throughput, runtime overhead and logging cost (``python -m benchmarks.run``)."""
