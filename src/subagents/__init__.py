"""subagents: a toolkit for out-of-process agents.

Layers, bottom up: :mod:`subagents.protocol` (sans-IO JSON-RPC and ACP models),
:mod:`subagents.rpc` (the anyio JSON-RPC peer), :mod:`subagents.transports` (byte streams and
child processes). Import what you use from those packages.
"""

__version__ = "0.1.0"

__all__ = ("__version__",)
