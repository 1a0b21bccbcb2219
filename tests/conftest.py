"""
Test-wide settings.

Every tool registered in a test has its results validated against its
output model by the SDK (L{gophergem.mcp._tools.check_output}): the server
skips that check in service, trusting what the tests prove here.
"""

from gophergem.mcp import _tools

# The throwaway servers' session fixtures (postgres_url, ...).
pytest_plugins = ["tests.servers.postgres", "tests.servers.redis"]

_tools.check_output = True
