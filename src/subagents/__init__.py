"""subagents: a toolkit for out-of-process agents.

One streamed delegation, through a registry name or a provider::

    async for event in subagents.delegate("reference", "hello"):
        ...  # progress events (switch on event.kind), then the "outcome" event

The names most users need are here: :func:`delegate` (and its events), the agent registry
(:func:`load_agents`, :class:`AgentSpec`, :func:`build_provider`) and the run contract's
values. They load on first use: ``import subagents`` itself imports nothing else.

Layers, bottom up: :mod:`subagents.protocol` (sans-IO JSON-RPC and ACP models),
:mod:`subagents.rpc` (the anyio JSON-RPC peer), :mod:`subagents.transports` (byte streams and
child processes), :mod:`subagents.providers` (the run contract and its providers),
:mod:`subagents.harness` (the in-process runtime). Import the rest from those packages.
"""

TYPE_CHECKING = False  # not `from typing import TYPE_CHECKING`: typing takes ~10 ms to import
if TYPE_CHECKING:
    from ._delegate import Delegation as Delegation
    from ._delegate import DelegationEvent as DelegationEvent
    from ._delegate import DelegationOutcome as DelegationOutcome
    from ._delegate import UnknownAgent as UnknownAgent
    from ._delegate import delegate as delegate
    from .cancel import CancelSignal as CancelSignal
    from .config import AgentSpec as AgentSpec
    from .config import ConfigError as ConfigError
    from .config import load_agents as load_agents
    from .providers.contract import ProgressEvent as ProgressEvent
    from .providers.contract import SubagentError as SubagentError
    from .providers.contract import SubagentOutcome as SubagentOutcome
    from .providers.contract import SubagentProvider as SubagentProvider
    from .providers.factory import build_provider as build_provider

__version__ = "0.1.0"

_WHERE: dict[str, str] = {
    "AgentSpec": ".config",
    "CancelSignal": ".cancel",
    "ConfigError": ".config",
    "Delegation": "._delegate",
    "DelegationEvent": "._delegate",
    "DelegationOutcome": "._delegate",
    "ProgressEvent": ".providers.contract",
    "SubagentError": ".providers.contract",
    "SubagentOutcome": ".providers.contract",
    "SubagentProvider": ".providers.contract",
    "UnknownAgent": "._delegate",
    "build_provider": ".providers.factory",
    "delegate": "._delegate",
    "load_agents": ".config",
}


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the imports above: a misspelt name is an error.
    def __getattr__(name: str) -> object:
        # Loaded on first use: `import subagents` (say, for `subagents.protocol`) stays cheap.
        module = _WHERE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = (
    "AgentSpec",
    "CancelSignal",
    "ConfigError",
    "Delegation",
    "DelegationEvent",
    "DelegationOutcome",
    "ProgressEvent",
    "SubagentError",
    "SubagentOutcome",
    "SubagentProvider",
    "UnknownAgent",
    "__version__",
    "build_provider",
    "delegate",
    "load_agents",
)
