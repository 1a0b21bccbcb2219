# Run with:  twistd -ny tac/gophergem.tac     (add --pidfile= to run several at once)
#
# The same service tree as `twistd gophergem`, configured from the environment:
#   GOPHERGEM_TRANSPORT      http (the default here) or stdio
#   GOPHERGEM_ENDPOINT       where HTTP listens (default tcp:8000:interface=127.0.0.1)
#   GOPHERGEM_ALLOWED_HOSTS  host names clients may use besides loopback ones (a,b)
#   GOPHER_*, GEMINI_*       the fetch policy; GOPHERGEM_LOG_LEVEL, GOPHERGEM_LOG_FILE
#   GOPHERGEM_HTTP_*         sessions, header timeout and drain period (docs/deployment.md)
# Logs go to stderr (or GOPHERGEM_LOG_FILE), never stdout.  SIGTERM stops it cleanly.
import os
import sys

from twisted.application.service import Application
from twisted.logger import ILogObserver
from twisted.python.usage import UsageError

from gophergem._log import log_through_twisted, observer_for
from gophergem.tap import (
    exit_if_cannot_listen,
    exit_on_listen_error,
    makeService,
    options_from_env,
)


def refuse(message):
    """A user error: one line on stderr, exit status 2."""
    sys.stderr.write(f"gophergem.tac: {message}\n")
    sys.exit(2)


try:
    options = options_from_env(os.environ)  # installs the asyncio reactor
except UsageError as error:
    refuse(error)

config = options["config"]
if options["transport"] == "http":
    exit_if_cannot_listen(options["endpoint"])  # a port in use: one line, exit status 2
# The log file stays open for the life of the process.
try:
    log_stream = open(config.log.file, "a", encoding="utf-8") if config.log.file else sys.stderr  # noqa: SIM115
except OSError as error:
    reason = error.strerror or error
    refuse(f"GOPHERGEM_LOG_FILE={config.log.file!r}: cannot write to it ({reason}).")
application = Application("gophergem")
application.setComponent(ILogObserver, observer_for(log_stream, config.log.level))
log_through_twisted(config.log.level)  # the SDK's log lines too, at our level
top = makeService(options)
exit_on_listen_error(top)  # a port in use: one line, exit status 2
top.setServiceParent(application)
