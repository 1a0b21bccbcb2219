# Run with:  twistd -ny tac/gophergem.tac
# The same service tree as `twistd gophergem`, configured from the environment
# (GOPHER_*, GEMINI_*, GOPHERGEM_*).  MCP on stdin/stdout; logs go to stderr.
import os
import sys

from twisted.internet import asyncioreactor

if "twisted.internet.reactor" not in sys.modules:
    asyncioreactor.install()

from twisted.application.service import Application
from twisted.logger import ILogObserver

from gophergem._log import stderr_observer
from gophergem.config import Config
from gophergem.service import makeService, reserve_stdout

application = Application("gophergem")
application.setComponent(ILogObserver, stderr_observer())
makeService(Config.from_env(os.environ), stdout_fd=reserve_stdout()).setServiceParent(application)
