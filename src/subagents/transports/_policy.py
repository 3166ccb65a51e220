"""Calling an embedder's permission policy, the same way in every transport.

A permission policy (ACP's :data:`~subagents.transports.acp_client.PermissionPolicy`, Codex's
:data:`~subagents.transports.codex_app_server.ApprovalPolicy`, Claude Code's
:data:`~subagents.transports.claude_code.ClaudePermissionPolicy`) is the embedder's code: when
it raises, that is a bug on the embedder's side, not the agent's. Every transport then answers
the agent with its protocol's deny (issue 19: a permission policy that raises is a deny, the
same for every transport) and logs the exception with its traceback, naming the policy and
the request, so it is never swallowed silently. Cancellation is not an exception here: it
propagates (it is a ``BaseException``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ("call_policy", "policy_name")

RequestT = TypeVar("RequestT")
DecisionT = TypeVar("DecisionT")


def policy_name(policy: object) -> str:
    """The policy as a log names it: ``module.qualname`` for a function, else its ``repr``."""
    qualname = getattr(policy, "__qualname__", None)
    if not isinstance(qualname, str):
        return repr(policy)
    module = getattr(policy, "__module__", None)
    return f"{module}.{qualname}" if isinstance(module, str) else qualname


async def call_policy(
    policy: Callable[[RequestT], Awaitable[DecisionT]],
    request: RequestT,
    *,
    logger: logging.Logger,
    asked: str,
    role: str = "permission policy",
) -> DecisionT | None:
    """``await policy(request)``; when it raises, log the exception with its traceback on
    ``logger`` (naming the ``role``, the policy and ``asked``, the permission asked for) and
    return ``None``, which the caller answers as its protocol's deny. A policy that answers
    ``None`` (no decision) is logged too, so a ``None`` here is always a logged deny."""
    try:
        decision = await policy(request)
    except Exception:
        logger.exception(
            "%s failed (%s raised) on %s; answering deny", role, policy_name(policy), asked
        )
        return None
    if decision is None:
        logger.error("%s %s answered None on %s; answering deny", role, policy_name(policy), asked)
    return decision
