"""A 20-line agent on the project's endpoint: what an agent author writes first (an echo).

The suite's first-contact tests copy it into a directory of their own and run it there by a
relative path, as its author would: ``subagents conformance -- python tiny_agent.py``.
"""

import uuid

from subagents.protocol import acp
from subagents.transports.acp_agent import Agent, AgentTurn, ClientConnection, run_agent


class Echo(Agent):
    agent_name = "tiny-echo"

    async def new_session(
        self, params: acp.NewSessionRequest, conn: ClientConnection
    ) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=uuid.uuid4().hex)

    async def prompt(self, params: acp.PromptRequest, turn: AgentTurn) -> acp.StopReason:
        for block in params.prompt:
            await turn.send_update(acp.AgentMessageChunkSessionUpdate(content=block))
        return "end_turn"


if __name__ == "__main__":
    run_agent(Echo())
