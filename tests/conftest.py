"""
Test-wide settings.

Every tool registered in a test has its results validated against its
output model by the SDK (L{gophergem.mcp.tools.check_output}): the server
skips that check in service, trusting what the tests prove here.

Hypothesis runs without its per-example deadline: that deadline is a timing
assertion, and speed is measured in bench/, never asserted in a test (on a
loaded machine, with the suites of two Pythons running at once, an example
of a parser property can take longer than 200 ms without anything being
wrong).
"""

import os

import pytest
from hypothesis import settings

from gophergem.mcp import tools

# The throwaway servers' session fixtures (postgres_url, ...).
pytest_plugins = ["tests.servers.postgres", "tests.servers.redis"]

tools.check_output = True

settings.register_profile("gophergem", deadline=None)
settings.load_profile("gophergem")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """
    Two workers a CPU for C{-n auto}: most of the suite's time is spent
    waiting for real servers and subprocesses, not computing.
    """
    return 2 * (os.cpu_count() or 1)
