"""Run gophergem as C{python -m gophergem}: the same as the console script."""

from gophergem.cli import main

raise SystemExit(main())
