"""The 20-line echo agent of the README's "Writing an ACP agent": an `Agent` subclass.

Run it from anywhere with `python -m subagents.examples.tiny_agent`, or copy it as your
`my_agent.py` and judge it: `subagents conformance -- python my_agent.py`.
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
