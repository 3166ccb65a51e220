"""Records the environment it was started with, then becomes another command (issue 10's
environment checks for children that cannot report their own environment).

    python tests/reliability/env_recorder.py OUT COMMAND [ARG...]

Writes ``dict(os.environ)`` as JSON to ``OUT``, then ``exec``s ``COMMAND`` with its
arguments (same pid, same environment, same stdio). Standard library only.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    out, command = sys.argv[1], sys.argv[2:]
    with open(out, "w", encoding="utf-8") as file:
        json.dump(dict(os.environ), file)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
