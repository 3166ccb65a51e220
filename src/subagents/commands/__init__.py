"""The subcommands of ``subagents`` (each module has ``add_parser(commands)`` and
``run(args) -> int``); :mod:`subagents.cli` wires them. Nothing is imported here, so that
``subagents --help`` stays fast."""

__all__ = ()
