"""A test fixture agent: the reference agent, advertising ``session/resume`` but not
``session/load``.

Run it as ``python tests/providers/resume_only_agent.py``; it speaks ACP over stdio like
``python -m subagents.agents.reference`` (same environment variables, e.g.
``SUBAGENTS_REFERENCE_SESSION_DIR`` for sessions that outlive the process). Two additions:

* with ``RESUME_ONLY_AGENT_LOG`` set to a file path, each ``session/new``, ``session/load``
  and ``session/resume`` it handles appends one line ``"<pid> <method>"`` to that file, so a
  test can tell which process opened a session and how;
* the prompt ``history`` answers with the user messages the agent holds for the session
  before this one, ``"history: A | B"`` (``"history: (none)"`` when there are none); that
  turn is not added to the history.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from subagents.agents._content import describe_block
from subagents.agents.reference import ReferenceAgent
from subagents.protocol import acp
from subagents.transports.acp_agent import run_agent

if TYPE_CHECKING:
    from subagents.protocol.acp import (
        AgentCapabilities,
        InitializeRequest,
        LoadSessionRequest,
        LoadSessionResponse,
        NewSessionRequest,
        NewSessionResponse,
        PromptRequest,
        PromptResponse,
        ResumeSessionRequest,
        ResumeSessionResponse,
        StopReason,
    )
    from subagents.transports.acp_agent import AgentTurn, ClientConnection

LOG_ENV_VAR = "RESUME_ONLY_AGENT_LOG"
"""Where each session setup (new, load, resume) is recorded, one ``"<pid> <method>"`` a line."""


def _record(method: str) -> None:
    path = os.environ.get(LOG_ENV_VAR)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {method}\n")


class ResumeOnlyAgent(ReferenceAgent):  # pyright: ignore[reportGeneralTypeIssues]
    """The reference agent without ``loadSession`` (``sessionCapabilities.resume`` kept)."""

    def capabilities(self, params: InitializeRequest) -> AgentCapabilities:
        capabilities = super().capabilities(params)
        capabilities.load_session = False
        return capabilities

    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        _record("session/new")
        return await super().new_session(params, conn)

    async def load_session(
        self, params: LoadSessionRequest, conn: ClientConnection
    ) -> LoadSessionResponse:
        _record("session/load")
        return await super().load_session(params, conn)

    async def resume_session(
        self, params: ResumeSessionRequest, conn: ClientConnection
    ) -> ResumeSessionResponse:
        _record("session/resume")
        return await super().resume_session(params, conn)

    async def prompt(self, params: PromptRequest, turn: AgentTurn) -> PromptResponse | StopReason:
        text = "".join(describe_block(block) for block in params.prompt)
        session = self.sessions.get(params.session_id)
        if text.strip().lower() != "history" or session is None:
            return await super().prompt(params, turn)
        earlier = [said for role, said in session.history if role == "user"]
        answer = "history: " + (" | ".join(earlier) if earlier else "(none)")
        await turn.send_update(
            acp.AgentMessageChunkSessionUpdate(content=acp.TextContentBlock(text=answer))
        )
        return "end_turn"


def main() -> None:
    """Serve the resume-only agent over stdio until stdin ends."""
    run_agent(ResumeOnlyAgent())


if __name__ == "__main__":
    main()
