"""Fake model servers the project owns, on 127.0.0.1: real agent binaries run offline on them.

``subagents demo`` runs Codex and Claude Code on them (no key, no network), and the tests run
every real agent on them. :mod:`subagents.testing.fake_models` re-exports them for tests.
"""
