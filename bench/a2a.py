"""The A2A bench (issue 21): ``A2AProvider`` vs the ``a2a-sdk``'s own client on one server.

    .venv/bin/python bench/a2a.py [--reps N] [--quick] [--out FILE]

Its code is ``bench/a2a_bench.py`` (see there): ``bench/run.py`` and ``bench/render.py`` import
it, and a module named ``a2a`` in ``bench/`` would shadow the SDK's ``a2a`` package for them.
"""

from __future__ import annotations

from a2a_bench import main

if __name__ == "__main__":
    main()
