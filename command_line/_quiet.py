"""Another library's chatter kept off the user's terminal while one call runs; its errors still show."""

import contextlib
import logging
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_logger(name: str) -> Iterator[None]:
    """``logging.getLogger(name)`` at ``ERROR`` inside the block; its own level comes back after it, also when the
    block raises."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
