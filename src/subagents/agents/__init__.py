"""Agents built on the ACP agent endpoint (:mod:`subagents.transports.acp_agent`).

* :mod:`subagents.agents.reference`: the conforming reference agent with an offline scripted
  model, run as ``python -m subagents.agents.reference``; the fixture that client, provider
  and conformance tests drive.

Nothing is imported here, so that starting an agent module stays fast.
"""

__all__ = ()
