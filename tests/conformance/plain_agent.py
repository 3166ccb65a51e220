"""An agent that only echoes, for the suite's unjudged outcomes: it never reads a file, runs
a terminal, asks permission or the user, or sends a plan, whatever the prompt says, and its
turns end at once (nothing to cancel). With ``--wrong-session`` every update carries a session
id it never issued (``<id>-other``).

Run it as ``python tests/conformance/plain_agent.py [--wrong-session]``.
"""

from __future__ import annotations

import sys
import uuid

from subagents.protocol import acp
from subagents.transports.acp_agent import Agent, AgentTurn, ClientConnection, run_agent


class PlainAgent(Agent):
    agent_name = "plain-echo"

    def __init__(self, wrong_session: bool = False) -> None:
        self.wrong_session = wrong_session

    async def new_session(
        self, params: acp.NewSessionRequest, conn: ClientConnection
    ) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=uuid.uuid4().hex)

    async def prompt(self, params: acp.PromptRequest, turn: AgentTurn) -> acp.StopReason:
        for block in params.prompt:
            update = acp.AgentMessageChunkSessionUpdate(content=block)
            if self.wrong_session:
                await turn.connection.send_update(f"{turn.session_id}-other", update)
            else:
                await turn.send_update(update)
        return "end_turn"


if __name__ == "__main__":
    run_agent(PlainAgent(wrong_session="--wrong-session" in sys.argv[1:]))
