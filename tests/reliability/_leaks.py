"""The leak checks (from :mod:`subagents.testing.leaks`)."""

from subagents.testing.leaks import assert_no_leak, descendants, snapshot

__all__ = ("assert_no_leak", "descendants", "snapshot")
