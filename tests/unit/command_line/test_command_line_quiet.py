"""``quiet_logger``: another library's warnings stay off the terminal for one call; its errors and level stay."""

import logging

import pytest

from mlflow_triton.command_line import quiet_logger


def test_quiet_logger_drops_warnings_and_keeps_errors_when_the_block_logs(caplog):
    logger = logging.getLogger("tests.quiet.chatty")
    with caplog.at_level(logging.DEBUG, logger="tests.quiet"), quiet_logger("tests.quiet.chatty"):
        logger.warning("column a: inference failed")
        logger.error("the conversion failed")

    assert [record.getMessage() for record in caplog.records] == ["the conversion failed"]


def test_quiet_logger_restores_the_level_when_the_block_raises():
    logger = logging.getLogger("tests.quiet.raising")
    logger.setLevel(logging.INFO)
    with pytest.raises(RuntimeError, match="boom"), quiet_logger("tests.quiet.raising"):
        assert logger.level == logging.ERROR
        raise RuntimeError("boom")

    assert logger.level == logging.INFO
