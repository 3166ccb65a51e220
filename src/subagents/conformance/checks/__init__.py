"""The checks, one per requirement; importing this package registers them all."""

from . import informational, lifecycle, sessions, turns, wire

__all__ = ("informational", "lifecycle", "sessions", "turns", "wire")
