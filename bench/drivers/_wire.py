"""The little the echo agents share: the raised message limit and the prompt header parser.

Imports nothing, so an agent pays only for its own stack at start-up (``_common``, which the
clients use, pulls in argparse, statistics and more: about 1.6 MB and a few ms).
"""

MiB = 1 << 20

#: Limit used by the implementations whose limit can be configured: above 64 MiB.
RAISED_LIMIT = 65 * MiB


def parse_prompt(text: str) -> tuple[int, int, bool]:
    """Parse the ``n,size,ack|`` header of a prompt text (used by every echo agent)."""
    head, _, _ = text[:64].partition("|")
    parts = head.split(",")
    try:
        n = int(parts[0])
        size = int(parts[1]) if len(parts) > 1 else 0
        ack = len(parts) > 2 and parts[2] == "1"
    except ValueError:
        return 0, 0, False
    return n, size, ack
