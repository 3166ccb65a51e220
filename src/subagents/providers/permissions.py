"""Permission policies that know who asks: the run's id and the agent's name.

Every out-of-process provider answers its child's permission requests through a policy
(``AcpProvider(permission_policy=...)``, ``CodexProvider(approval_policy=...)``,
``ClaudeCodeProvider(permission_policy=...)``). A plain policy is ``async def
policy(request)``; wrapped in :class:`RunAware` it is ``async def decide(asker, request)``
and gets, with every request, a :class:`PermissionAsker` naming the run that asks (the id the
service minted), the agent (the provider's name) and the child's remote id::

    async def decide(asker: PermissionAsker, request: ApprovalRequest) -> Decision:
        log.info("%s (%s) asks to run %s", asker.child_id, asker.agent, request.command)
        return "decline"

    CodexProvider(command, approval_policy=RunAware(decide))

A :class:`RunAware` policy is itself a plain policy (called outside a run, its asker has an
empty ``child_id``), so it fits wherever a transport takes one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar, final

from .contract import deprecated_alias

__all__ = ("PermissionAsker", "RunAware")

RequestT = TypeVar("RequestT")
DecisionT = TypeVar("DecisionT")


@final
@dataclass(frozen=True, slots=True)
class PermissionAsker:
    """Who asks for a permission."""

    child_id: str
    """The run's (or continuable child's) id: the one the service minted."""
    agent: str
    """The provider's name (the agent's name in the registry)."""
    remote_id: str = ""
    """The child's own id on the other side (session, thread), once known."""

    @property
    def run_id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "run_id")
        return self.child_id


@final
class RunAware(Generic[RequestT, DecisionT]):
    """A permission policy that is told which run asks (see the module docstring)."""

    __slots__ = ("_decide",)

    def __init__(self, decide: Callable[[PermissionAsker, RequestT], Awaitable[DecisionT]]) -> None:
        self._decide = decide

    def bind(
        self, asker: Callable[[], PermissionAsker]
    ) -> Callable[[RequestT], Awaitable[DecisionT]]:
        """The plain policy of one run: each request is decided with ``asker()`` (read at the
        time of the request, so the remote id is current)."""
        decide = self._decide

        async def policy(request: RequestT) -> DecisionT:
            return await decide(asker(), request)

        return policy

    async def __call__(self, request: RequestT) -> DecisionT:
        return await self._decide(PermissionAsker("", ""), request)
