# -*- test-case-name: tests.test_testing_hostile -*-
"""
C{python -m gophergem.testing.hostile}: see L{gophergem.testing.hostile._command}.
"""

from gophergem.testing.hostile._command import main

if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess
    raise SystemExit(main())
