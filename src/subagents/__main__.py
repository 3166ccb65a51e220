"""``python -m subagents``: the ``subagents`` command."""

from .cli import main

raise SystemExit(main())
