"""``python -m chatrecall``: the command line."""

from .cli import main

raise SystemExit(main())
