"""Examples that ship in the package, runnable from any directory.

``python -m subagents.examples.tiny_agent``: the 20-line echo agent of README's "Writing an
ACP agent", what an agent author writes first (``subagents conformance -- python -m
subagents.examples.tiny_agent`` judges it).
"""
