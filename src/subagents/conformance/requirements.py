"""The requirement registry: what the conformance suite checks, and where the spec says so.

Every requirement has a stable id ``ACP-<AREA>-<NNN>`` (the official acp-tck's id where the
semantics are the same), a tier, a capability gate (for the capability tier), the requirement
text and a citation: a page of the ACP v1 docs at the vendored commit, and where one exists a
JSON pointer into the vendored ``schema.json``. Exactly one check implements each requirement
(:mod:`subagents.conformance.checks`); meta-tests keep the two in step.

Tiers
-----
``mandatory``
    A MUST of the spec that every agent has to meet. A failure makes the agent non-conformant.
``capability``
    A MUST that applies once the agent advertises a capability (its gate). Not applicable
    otherwise; a failure when it applies makes the agent non-conformant.
``advisory``
    A SHOULD, or a MUST the suite can only approximate. A failure is a warning.
``informational``
    Behaviour the spec leaves open; recorded, never judged.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Final

__all__ = (
    "BASIC_EXCHANGE",
    "REQUIREMENTS",
    "SPEC_COMMIT",
    "Requirement",
    "Tier",
    "requirement",
)

SPEC_COMMIT: Final = "b7f0005493b98de32fabee3e9540e2b64da68535"
"""The agent-client-protocol commit the vendored schema and every citation refer to."""

BASIC_EXCHANGE: Final = (
    "the basic exchange: initialize (protocolVersion 1), session/new, one --prompt turn, then "
    "stdin closed, on one agent process that the checks judging it share"
)
"""What a requirement's :attr:`Requirement.checks` means by "the basic exchange"."""

_ID = re.compile(r"^ACP-[A-Z]+(?:-[A-Z]+)?-\d{3}$")


class Tier(enum.Enum):
    MANDATORY = "mandatory"
    CAPABILITY = "capability"
    ADVISORY = "advisory"
    INFORMATIONAL = "informational"


@dataclass(frozen=True)
class Requirement:
    """One requirement of the suite."""

    id: str
    tier: Tier
    text: str
    doc: str
    """The spec page (``docs/protocol/v1/<page>.mdx``, optionally ``#section``)."""
    schema: str | None = None
    """A JSON pointer into the vendored ``schema.json`` (``#/$defs/...``), when one applies."""
    gate: str | None = None
    """What the agent must advertise for the requirement to apply (capability tier; optional
    for the advisory tier)."""
    checks: str = ""
    """What the suite does to judge it, in a sentence: what it sends, what it expects (the
    check in :mod:`subagents.conformance.checks`; ``subagents conformance --list``)."""
    fix: str = ""
    """How an agent that fails it usually gets it right (``subagents conformance --explain``)."""

    def __post_init__(self) -> None:
        if not _ID.match(self.id):
            raise ValueError(f"bad requirement id {self.id!r}")
        if self.tier is Tier.CAPABILITY and self.gate is None:
            raise ValueError(f"{self.id}: a capability requirement needs a gate")
        if self.tier in (Tier.MANDATORY, Tier.INFORMATIONAL) and self.gate is not None:
            raise ValueError(f"{self.id}: only capability and advisory requirements have gates")

    @property
    def area(self) -> str:
        return self.id.split("-")[1]

    @property
    def citation(self) -> str:
        page = f"docs/protocol/v1/{self.doc}"
        schema = f"; schema/v1/schema.json{self.schema}" if self.schema else ""
        return f"{page}{schema} @ agent-client-protocol {SPEC_COMMIT[:12]}"


_ALL: tuple[Requirement, ...] = (
    # -- transport ------------------------------------------------------------------------
    Requirement(
        "ACP-TRANSPORT-001",
        Tier.MANDATORY,
        "Every line the agent writes to stdout is one valid JSON-RPC 2.0 message: the agent "
        "writes nothing to stdout that is not an ACP message.",
        "transports.mdx#stdio",
        checks=(
            "In the basic exchange, every line the agent writes to stdout must parse as a "
            "JSON-RPC 2.0 message."
        ),
        fix=(
            "Write logs and diagnostics to stderr, never stdout (print() included), and write "
            "only whole ACP messages to stdout."
        ),
    ),
    Requirement(
        "ACP-TRANSPORT-002",
        Tier.MANDATORY,
        "The agent's stdout is valid UTF-8.",
        "transports.mdx#stdio",
        checks="In the basic exchange, every stdout line must decode as UTF-8.",
        fix=(
            "Write stdout as UTF-8 whatever the locale says (set the encoding explicitly); send "
            "no raw bytes."
        ),
    ),
    Requirement(
        "ACP-TRANSPORT-003",
        Tier.MANDATORY,
        "Messages are delimited by newlines and contain no embedded newline (a message is "
        "never spread over several lines).",
        "transports.mdx#stdio",
        checks=(
            "In the basic exchange, no message may be spread over several lines (lines that only "
            "parse joined together)."
        ),
        fix=(
            "Serialize each message compactly on one line (no pretty-printing; a newline inside a"
            " string is the escape \\n) and end it with a newline."
        ),
    ),
    # -- JSON-RPC -------------------------------------------------------------------------
    Requirement(
        "ACP-JSONRPC-001",
        Tier.MANDATORY,
        "A response's id echoes the request's id exactly, for integer and string ids.",
        "overview.mdx",
        "#/$defs/RequestId",
        checks=(
            'A fresh process gets initialize with the string id "conformance-init-1", then '
            'session/new with the integer id 7 and the string id "conformance-new-2"; each answer'
            " must carry its request's id, of the same JSON type."
        ),
        fix=(
            "Copy the request's id into its response unchanged: never turn a string id into a "
            "number (or back), never renumber."
        ),
    ),
    Requirement(
        "ACP-JSONRPC-002",
        Tier.MANDATORY,
        'A response carries exactly one of "result" and "error"; an error has an integer '
        '"code" and a string "message".',
        "overview.mdx",
        "#/$defs/Error",
        checks=(
            "Sends an unknown method, a session/prompt with invalid params and a session/new; "
            "each response must hold exactly one of result and error, an error an integer code "
            "and a string message."
        ),
        fix=(
            'Answer an error as {"code": int, "message": str} with no result, a success with a '
            "result and no error."
        ),
    ),
    Requirement(
        "ACP-JSONRPC-003",
        Tier.MANDATORY,
        "Notifications never receive a response, success or error (session/cancel, an "
        "unknown _-prefixed notification).",
        "overview.mdx",
        checks=(
            "Sends three notifications (session/cancel of an idle session, _conformance/notice, "
            "conformance/unknown-notification), then a session/new; no answer to a notification "
            "may arrive, by the end of a quiet period after it."
        ),
        fix=(
            "Never answer a message that has no id, not even with a method-not-found error: drop "
            "unknown notifications."
        ),
    ),
    Requirement(
        "ACP-JSONRPC-004",
        Tier.ADVISORY,
        "An unknown method, whether _-prefixed (a custom request) or not, is answered with "
        "error -32601 (method not found).",
        "extensibility.mdx#custom-requests",
        "#/$defs/ErrorCode",
        checks=(
            "Sends the requests conformance/no-such-method and _conformance/no-such-method; each "
            "must be answered with error -32601."
        ),
        fix=(
            "Answer every request whose method you do not implement with error -32601, custom "
            "_-prefixed ones included (not a null result, not -32603)."
        ),
    ),
    Requirement(
        "ACP-JSONRPC-005",
        Tier.ADVISORY,
        "After an erroneous request the connection stays usable: the next request succeeds.",
        "overview.mdx",
        checks=(
            "Sends an unknown method and a session/new with invalid params (cwd 42), then a valid"
            " session/new, which must succeed."
        ),
        fix=(
            "Answer an invalid request with an error and keep reading: a bad request must not end"
            " the connection or break its state."
        ),
    ),
    # -- initialization -------------------------------------------------------------------
    Requirement(
        "ACP-INIT-001",
        Tier.MANDATORY,
        "initialize succeeds with a result carrying the chosen protocolVersion as a JSON "
        "integer (its schema validity is ACP-SCHEMA-001's).",
        "initialization.mdx",
        "#/$defs/InitializeResponse",
        checks=(
            "The initialize of the basic exchange (protocolVersion 1): its result's "
            "protocolVersion must be a JSON integer."
        ),
        fix=(
            "Answer initialize with protocolVersion as a number (1), not a string, and with your "
            "agentCapabilities."
        ),
    ),
    Requirement(
        "ACP-INIT-002",
        Tier.MANDATORY,
        "When the client requests protocol version 1, the agent responds with 1.",
        "initialization.mdx#protocol-version",
        checks=(
            "The initialize of the basic exchange asks for protocolVersion 1; the answer must be 1."
        ),
        fix="When the client asks for a version you support, answer with that version.",
    ),
    Requirement(
        "ACP-INIT-003",
        Tier.MANDATORY,
        "When the client requests a version the agent does not support (65535), the agent "
        "responds successfully with the latest version it supports, not the requested one.",
        "initialization.mdx#protocol-version",
        checks=(
            "A fresh process gets initialize with protocolVersion 65535; it must succeed with the"
            " agent's latest version (1 to 65534), not 65535 and not an error."
        ),
        fix=(
            "Answer with the requested version if you support it, else your latest one: never "
            "echo the requested version blindly, never refuse an unknown one."
        ),
    ),
    Requirement(
        "ACP-INIT-004",
        Tier.ADVISORY,
        "The initialize result names the agent: agentInfo with name and version.",
        "initialization.mdx#implementation-information",
        "#/$defs/Implementation",
        checks=(
            "The initialize result of the basic exchange must carry agentInfo with a non-empty "
            "name and version."
        ),
        fix='Add "agentInfo": {"name": ..., "version": ...} to the initialize result.',
    ),
    Requirement(
        "ACP-INIT-005",
        Tier.ADVISORY,
        "A session method sent before initialize is not served: session/new as the first "
        "message is answered with an error (the project's endpoint answers -32600), not a "
        'session. A spec gap: "Before a Session can be created, Clients MUST initialize the '
        'connection", and nothing says what the agent does when one does not, hence advisory.',
        "initialization.mdx",
        checks=(
            "A fresh process gets session/new as its first message, before any initialize; it "
            "must not be answered with a session (an error, or no answer, passes)."
        ),
        fix=(
            "Refuse every request that comes before initialize with an error (-32600, as the "
            "official TypeScript SDK does)."
        ),
    ),
    # -- schema ---------------------------------------------------------------------------
    Requirement(
        "ACP-SCHEMA-001",
        Tier.MANDATORY,
        "Every message the agent sends validates against the vendored v1 schema: the basic "
        "exchange of this check (initialize, session/new, a prompt turn with its updates) and "
        "every message of every other check of the run.",
        "overview.mdx",
        "#/$defs/AgentResponse",
        checks=(
            "Validates every message the agent sends in the whole run against the vendored v1 "
            "schema: the basic exchange, and every other check's messages."
        ),
        fix=(
            "Fix the message the finding names (its JSON path, the schema rule it breaks); types "
            "generated from the ACP schema avoid most of these."
        ),
    ),
    Requirement(
        "ACP-SCHEMA-002",
        Tier.ADVISORY,
        "The agent's params and results carry no fields the schema does not define, at any "
        "depth (each finding names its JSON path), outside _meta: a leniency-only defect, "
        "clients that are strict reject them. Fields the protocol's unstable schema defines "
        "(schema.unstable.json, such as usage in a prompt response) are reported as unstable "
        "use (informational), not as findings. Judged over every message of the run, like "
        "ACP-SCHEMA-001.",
        "extensibility.mdx#the-_meta-field",
        checks=(
            "Searches every params and result the agent sends in the whole run for fields the "
            "schema does not define, at any depth outside _meta."
        ),
        fix="Drop the fields named, or move them under _meta (the place for extensions).",
    ),
    # -- sessions -------------------------------------------------------------------------
    Requirement(
        "ACP-SESSION-001",
        Tier.MANDATORY,
        "session/new with an absolute cwd and no MCP servers succeeds with a non-empty sessionId.",
        "session-setup.mdx#creating-a-session",
        "#/$defs/NewSessionResponse",
        checks=(
            "The session/new of the basic exchange (an absolute cwd, no MCP servers) must succeed"
            " with a non-empty sessionId."
        ),
        fix="Implement session/new and answer it with a sessionId.",
    ),
    Requirement(
        "ACP-SESSION-002",
        Tier.MANDATORY,
        "Two session/new calls on one connection return different session ids.",
        "session-setup.mdx#creating-a-session",
        checks="Two session/new calls on one connection; their session ids must differ.",
        fix="Make a new id for every session (a UUID), never a constant.",
    ),
    Requirement(
        "ACP-SESSION-003",
        Tier.ADVISORY,
        "No session/update for a session arrives before the session/new response that creates "
        "it: the client learns the session id from that response (and the sequence diagram "
        "has the response before the session is ready), so an earlier update is for a session "
        "it does not know; real clients drop such updates or reject them. A spec gap: no "
        "sentence orders them, hence advisory.",
        "session-setup.mdx#creating-a-session",
        "#/$defs/NewSessionResponse",
        checks=(
            "Two session/new calls; no session/update for a new session may arrive before the "
            "session/new response that creates it."
        ),
        fix=(
            "Write the session/new response first, then the session's updates (available commands"
            " and the like): schedule them after the answer."
        ),
    ),
    Requirement(
        "ACP-PATHS-001",
        Tier.MANDATORY,
        "Every file path the agent sends (fs/* paths, tool call locations, diffs, terminal "
        "cwd) is absolute.",
        "overview.mdx#argument-requirements",
        checks=(
            "Prompts with --fs-prompt, --terminal-prompt and --tool-prompt, the file system and "
            "terminals offered; every path in fs/* requests, tool call locations, diffs and "
            "terminal cwds must be absolute (not exercised when none is sent)."
        ),
        fix="Resolve every path against the session's cwd before sending it.",
    ),
    Requirement(
        "ACP-MCP-001",
        Tier.MANDATORY,
        '"All Agents MUST support connecting to MCP servers via stdio": session/new with a '
        "stdio MCP server (the suite's probe) succeeds, and the agent uses the server: it starts "
        "it and sends it an MCP initialize, at session setup or at the latest during the first "
        "prompt turn (plus a short grace). Accepting the server and never starting it is not "
        "support.",
        "session-setup.mdx#stdio-transport",
        "#/$defs/McpServerStdio",
        checks=(
            "session/new with one stdio MCP server (the suite's probe, an absolute command), then"
            " a prompt; the probe must be started and sent an MCP initialize, at the latest by "
            "the end of that turn plus 0.5 s."
        ),
        fix=(
            "Start every stdio MCP server of session/new (command, args, env) and run the MCP "
            "handshake with it, at session setup or by the first prompt."
        ),
    ),
    Requirement(
        "ACP-MCP-002",
        Tier.ADVISORY,
        '"Agents SHOULD connect to all MCP servers specified by the Client": given two stdio '
        "MCP servers in session/new, the agent sends each an MCP initialize (by the end of the "
        "first prompt turn, plus a short grace). An agent that connects to none is judged by "
        "ACP-MCP-001.",
        "session-setup.mdx#mcp-servers",
        checks=(
            "session/new with two stdio MCP servers, then a prompt; each must be sent an MCP "
            "initialize by the end of that turn plus 0.5 s."
        ),
        fix="Connect to every MCP server the client gives, not only the first.",
    ),
    Requirement(
        "ACP-MCP-005",
        Tier.MANDATORY,
        "A stdio MCP server is launched as session/new describes it: with the entry's env "
        'variables set ("Environment variables to set when launching the server"; servers '
        "get their credentials this way). Part of the stdio support every agent MUST have.",
        "session-setup.mdx#stdio-transport",
        "#/$defs/McpServerStdio",
        checks=(
            "session/new with one stdio MCP server whose env entry sets a token variable, then a "
            "prompt; the started server must find that token in its environment."
        ),
        fix="Launch each stdio MCP server with its entry's env variables added to the environment.",
    ),
    Requirement(
        "ACP-MCP-003",
        Tier.CAPABILITY,
        "An agent advertising mcpCapabilities.http accepts an HTTP MCP server in session/new "
        "(the suite serves one on 127.0.0.1).",
        "session-setup.mdx#mcp-servers",
        "#/$defs/McpServerHttp",
        gate="agentCapabilities.mcpCapabilities.http",
        checks=(
            "session/new with an HTTP MCP server the suite serves on 127.0.0.1, then a prompt; it"
            " must be accepted and sent an MCP initialize by the end of that turn plus 0.5 s."
        ),
        fix="Connect to HTTP MCP servers, or stop advertising mcpCapabilities.http.",
    ),
    Requirement(
        "ACP-MCP-004",
        Tier.CAPABILITY,
        "An agent advertising mcpCapabilities.sse accepts an SSE MCP server in session/new "
        "(the suite serves one on 127.0.0.1).",
        "session-setup.mdx#mcp-servers",
        "#/$defs/McpServerSse",
        gate="agentCapabilities.mcpCapabilities.sse",
        checks=(
            "session/new with an SSE MCP server the suite serves on 127.0.0.1, then a prompt; it "
            "must be accepted and sent an MCP initialize by the end of that turn plus 0.5 s."
        ),
        fix="Connect to SSE MCP servers, or stop advertising mcpCapabilities.sse.",
    ),
    Requirement(
        "ACP-LOAD-001",
        Tier.CAPABILITY,
        "session/load succeeds the way a client uses it, in a new agent process after the "
        'one that made the session (and had a prompt turn in it) has exited ("persistence '
        'across restarts"), and the session then takes a prompt. Loading a session still '
        "active in the same process is not judged: the spec says nothing of it.",
        "session-setup.mdx#loading-sessions",
        "#/$defs/LoadSessionResponse",
        gate="agentCapabilities.loadSession",
        checks=(
            "One agent process makes a session with a prompt turn and exits (stdin closed); a new"
            " process gets session/load of it (with its cwd), then a prompt; both must succeed."
        ),
        fix=(
            "Keep sessions outside the process (on disk) and load them by id in a new one, or "
            "stop advertising loadSession."
        ),
    ),
    Requirement(
        "ACP-LOAD-002",
        Tier.CAPABILITY,
        "session/load (in a new agent process) replays the whole conversation as "
        "session/update notifications, the user's earlier prompt included, all before the "
        "response.",
        "session-setup.mdx#loading-sessions",
        gate="agentCapabilities.loadSession",
        checks=(
            "The same session/load from a new process: before its response, updates must replay "
            "the conversation, the earlier prompt as a user_message_chunk included; no replay may"
            " come after the response."
        ),
        fix=(
            "Replay the history (user and agent messages) as session/update notifications, then "
            "answer session/load."
        ),
    ),
    Requirement(
        "ACP-LOAD-003",
        Tier.ADVISORY,
        "The result of session/load (in a new agent process) is an object ({}), not null.",
        "session-setup.mdx#loading-sessions",
        "#/$defs/LoadSessionResponse",
        gate="agentCapabilities.loadSession",
        checks=(
            "The same session/load from a new process: its result must be a JSON object, not null."
        ),
        fix=(
            "Answer session/load with {} (or an object with the session's modes and config "
            "options), never null."
        ),
    ),
    Requirement(
        "ACP-LOAD-004",
        Tier.ADVISORY,
        "session/load of a session id that never existed is an error, not a success.",
        "session-setup.mdx#loading-sessions",
        gate="agentCapabilities.loadSession",
        checks=(
            'session/load of the session id "conformance-no-such-session", which never existed; '
            "it must be answered with an error."
        ),
        fix="Answer session/load of an unknown session id with an error (resource not found).",
    ),
    Requirement(
        "ACP-ADDDIRS-001",
        Tier.CAPABILITY,
        "session/new with an absolute additionalDirectories entry is accepted, and the session "
        "takes a prompt.",
        "session-setup.mdx",
        "#/$defs/SessionAdditionalDirectoriesCapabilities",
        gate="agentCapabilities.sessionCapabilities.additionalDirectories",
        checks=(
            "session/new with an absolute additionalDirectories entry, then a prompt in that "
            "session; both must succeed."
        ),
        fix=(
            "Accept additionalDirectories in session/new, or stop advertising "
            "sessionCapabilities.additionalDirectories."
        ),
    ),
    Requirement(
        "ACP-RESUME-001",
        Tier.CAPABILITY,
        "session/resume succeeds in a new agent process after the one that made the session "
        "has exited (a client reconnecting), and the session takes a prompt afterwards. "
        "Resuming a session still active in the same process is not judged.",
        "session-setup.mdx#resuming-sessions",
        "#/$defs/ResumeSessionResponse",
        gate="agentCapabilities.sessionCapabilities.resume",
        checks=(
            "One agent process makes a session with a prompt turn and exits (stdin closed); a new"
            " process gets session/resume of it (with its cwd), then a prompt; both must succeed."
        ),
        fix=(
            "Keep sessions outside the process and resume them by id in a new one, or stop "
            "advertising sessionCapabilities.resume."
        ),
    ),
    Requirement(
        "ACP-RESUME-002",
        Tier.CAPABILITY,
        "session/resume (in a new agent process) does not replay the conversation: no "
        "history update for the session arrives before its response.",
        "session-setup.mdx#resuming-sessions",
        gate="agentCapabilities.sessionCapabilities.resume",
        checks=(
            "The same session/resume from a new process: no history update of the session may "
            "arrive before its response."
        ),
        fix="Do not replay the history on session/resume (replaying is session/load's).",
    ),
    Requirement(
        "ACP-LIST-001",
        Tier.CAPABILITY,
        "session/list returns a sessions array that includes a session just created (filtered "
        "by its cwd).",
        "session-list.mdx",
        "#/$defs/ListSessionsResponse",
        gate="agentCapabilities.sessionCapabilities.list",
        checks=(
            "Makes a session with a prompt turn, then session/list filtered by its cwd; the "
            "result must hold a sessions array that includes it."
        ),
        fix=(
            "List the sessions you made, filtered by cwd, or stop advertising "
            "sessionCapabilities.list."
        ),
    ),
    Requirement(
        "ACP-LIST-002",
        Tier.CAPABILITY,
        "session/list returns an empty sessions array when no session matches (a cwd no "
        "session uses).",
        "session-list.mdx",
        gate="agentCapabilities.sessionCapabilities.list",
        checks=(
            "Makes a session with a prompt turn, then session/list with a cwd no session uses; "
            "the sessions array must be empty."
        ),
        fix="Apply session/list's cwd filter.",
    ),
    Requirement(
        "ACP-LIST-003",
        Tier.ADVISORY,
        'session/list with an invalid cursor is an error: "Agents SHOULD return an error if '
        'the cursor is invalid" (a SHOULD, so advisory: a warning, never a verdict).',
        "session-list.mdx#pagination",
        gate="agentCapabilities.sessionCapabilities.list",
        checks=(
            'session/list with the cursor "conformance-invalid-cursor", which the agent never '
            "issued; it must be answered with an error."
        ),
        fix="Refuse a cursor you did not issue with an error (invalid params, -32602).",
    ),
    Requirement(
        "ACP-DELETE-001",
        Tier.CAPABILITY,
        "session/delete of an existing session succeeds (and it is no longer listed, when the "
        "agent lists sessions).",
        "session-delete.mdx",
        "#/$defs/DeleteSessionResponse",
        gate="agentCapabilities.sessionCapabilities.delete",
        checks=(
            "Makes a session with a prompt turn and deletes it with session/delete, which must "
            "succeed; when the agent lists sessions, session/list must no longer include it."
        ),
        fix=(
            "Implement session/delete (and forget the session), or stop advertising "
            "sessionCapabilities.delete."
        ),
    ),
    Requirement(
        "ACP-DELETE-002",
        Tier.ADVISORY,
        "Deleting a session that never existed succeeds silently.",
        "session-delete.mdx",
        gate="agentCapabilities.sessionCapabilities.delete",
        checks=(
            'session/delete of "conformance-no-such-session", which never existed; it must succeed.'
        ),
        fix="Answer the deletion of an unknown session with success ({}), not an error.",
    ),
    Requirement(
        "ACP-CLOSE-001",
        Tier.CAPABILITY,
        "session/close of an idle session succeeds.",
        "session-setup.mdx#closing-sessions",
        "#/$defs/CloseSessionResponse",
        gate="agentCapabilities.sessionCapabilities.close",
        checks=(
            "Makes a session with a prompt turn, then session/close of it while it is idle; it "
            "must succeed."
        ),
        fix="Implement session/close, or stop advertising sessionCapabilities.close.",
    ),
    Requirement(
        "ACP-CLOSE-002",
        Tier.CAPABILITY,
        "session/close during a running prompt cancels it as session/cancel would: the prompt "
        'is answered with stopReason "cancelled".',
        "session-setup.mdx#closing-sessions",
        gate="agentCapabilities.sessionCapabilities.close",
        checks=(
            "Several rounds, each a --cancel-prompt prompt (default slow) interrupted by "
            "session/close at another moment; each prompt must be answered with stopReason "
            '"cancelled", and the close answered.'
        ),
        fix=(
            "On session/close, cancel the running turn as session/cancel does: answer its prompt "
            'with stopReason "cancelled", then the close.'
        ),
    ),
    # -- prompt turn ----------------------------------------------------------------------
    Requirement(
        "ACP-PROMPT-001",
        Tier.MANDATORY,
        "A text-only session/prompt is answered with a result whose stopReason is one of the "
        "defined StopReason values.",
        "prompt-turn.mdx#4-check-for-completion",
        "#/$defs/StopReason",
        checks=(
            "The prompt turn of the basic exchange (--prompt, default Hello) must be answered "
            "with one of the defined stopReason values."
        ),
        fix=(
            'Answer session/prompt with {"stopReason": "end_turn"} (or another StopReason value) '
            "when the turn ends."
        ),
    ),
    Requirement(
        "ACP-PROMPT-002",
        Tier.MANDATORY,
        "Every session/update sent during a prompt turn carries the prompted session's id.",
        "prompt-turn.mdx#3-agent-reports-output",
        "#/$defs/SessionNotification",
        checks=(
            "Every session/update of the prompt turn of the basic exchange must carry the "
            "prompted session's sessionId."
        ),
        fix="Put the prompted session's id in every session/update of its turn.",
    ),
    Requirement(
        "ACP-PROMPT-003",
        Tier.ADVISORY,
        "A prompt with a resource_link content block alongside text is accepted (the docs "
        "disagree on whether this is a MUST).",
        "initialization.mdx#prompt-capabilities",
        "#/$defs/ResourceLink",
        checks=(
            "A prompt of a text block and a resource_link block (file:///tmp/conformance.txt); it"
            " must be answered with a stop reason, not an error."
        ),
        fix="Accept resource_link blocks in a prompt (use them, or ignore them).",
    ),
    Requirement(
        "ACP-PROMPT-004",
        Tier.ADVISORY,
        "A prompt of 1 MiB of text is answered (with any stop reason or an error), and the "
        "agent keeps working.",
        "prompt-turn.mdx",
        checks=(
            "A prompt of --prompt followed by 1 MiB of realistic prose (answered with any stop "
            "reason or an error), then an ordinary prompt in the same session, which must "
            "succeed."
        ),
        fix=(
            "Handle a large prompt without crashing or wedging: refuse it with an error if it is "
            "too big, and keep serving the session."
        ),
    ),
    Requirement(
        "ACP-PROMPTCAP-001",
        Tier.CAPABILITY,
        "With promptCapabilities.image, a prompt with an image block is accepted.",
        "content.mdx#image-content",
        "#/$defs/ImageContent",
        gate="agentCapabilities.promptCapabilities.image",
        checks=(
            "A prompt of a text block and a 1x1 PNG image block; it must be answered with a stop "
            "reason, not an error."
        ),
        fix="Accept image blocks, or stop advertising promptCapabilities.image.",
    ),
    Requirement(
        "ACP-PROMPTCAP-002",
        Tier.CAPABILITY,
        "With promptCapabilities.audio, a prompt with an audio block is accepted.",
        "content.mdx#audio-content",
        "#/$defs/AudioContent",
        gate="agentCapabilities.promptCapabilities.audio",
        checks=(
            "A prompt of a text block and a short WAV audio block; it must be answered with a "
            "stop reason, not an error."
        ),
        fix="Accept audio blocks, or stop advertising promptCapabilities.audio.",
    ),
    Requirement(
        "ACP-PROMPTCAP-003",
        Tier.CAPABILITY,
        "With promptCapabilities.embeddedContext, a prompt with an embedded resource is accepted.",
        "content.mdx#embedded-resource",
        "#/$defs/EmbeddedResource",
        gate="agentCapabilities.promptCapabilities.embeddedContext",
        checks=(
            "A prompt of a text block and an embedded text resource block; it must be answered "
            "with a stop reason, not an error."
        ),
        fix=(
            "Accept embedded resource blocks, or stop advertising "
            "promptCapabilities.embeddedContext."
        ),
    ),
    Requirement(
        "ACP-META-001",
        Tier.ADVISORY,
        "A session/prompt carrying _meta is accepted.",
        "extensibility.mdx#the-_meta-field",
        checks=(
            "A session/prompt whose params carry _meta; it must be answered with a stop reason, "
            "not an error."
        ),
        fix="Accept (and ignore, if unknown) _meta wherever the schema allows it.",
    ),
    # -- cancellation ---------------------------------------------------------------------
    Requirement(
        "ACP-CANCEL-001",
        Tier.MANDATORY,
        "After session/cancel during a running prompt, the prompt is answered with a result "
        'whose stopReason is "cancelled", not an error, in each of several turns cancelled at '
        "different moments (right after the prompt, at its first update, later).",
        "prompt-turn.mdx#cancellation",
        checks=(
            "--cancel-rounds (default 6) sessions each get a --cancel-prompt prompt (default "
            "slow) cancelled with session/cancel at another moment (right after the prompt, at "
            'its first update, later); each prompt must be answered with stopReason "cancelled", '
            "not an error."
        ),
        fix=(
            'On session/cancel, stop the turn and answer its prompt with stopReason "cancelled"; '
            "catch the cancellation (and errors it causes) instead of answering with an error. If"
            " your turns end at once, --cancel-prompt names one the agent works on longer."
        ),
    ),
    Requirement(
        "ACP-CANCEL-002",
        Tier.MANDATORY,
        "Every update of a cancelled turn (message, thought, tool call, plan, usage, any kind "
        "but the session's state) arrives before the prompt's response; none arrives after it, "
        "in any of several cancelled turns (updates of the session's state: available "
        "commands, mode, config options, session info, may come at any time).",
        "prompt-turn.mdx#cancellation",
        checks=(
            "The same cancelled turns: every update of a turn (but session-state updates: "
            "commands, mode, config options, session info) must arrive before its prompt's "
            "response; the session is watched for late ones until the check ends."
        ),
        fix=(
            "Flush (or drop) the turn's pending updates before writing the cancelled prompt's "
            "response, and send none of that turn after it."
        ),
    ),
    Requirement(
        "ACP-CANCEL-003",
        Tier.ADVISORY,
        "After a cancelled turn the session takes the next prompt: it is answered with a stop "
        'reason other than "cancelled" (it was never cancelled) and, when the same prompt gets '
        "an answer in a fresh session, with at least one update.",
        "prompt-turn.mdx#cancellation",
        checks=(
            "Cancelled turns as above, each followed by an ordinary prompt in the same session; "
            'it must be answered with a stop reason other than "cancelled" and, if the same '
            "prompt gets updates in a fresh session, with an update."
        ),
        fix=(
            "Reset the session's cancellation state when a turn ends, so the next prompt runs "
            "normally."
        ),
    ),
    Requirement(
        "ACP-CANCEL-004",
        Tier.ADVISORY,
        "The turn after a cancelled one gets its own answer: it does not carry the cancelled "
        "turn's content (its message or tool call ids, or its text where the same prompt in a "
        "fresh session says no such thing). The cancelled turn's updates all come before its "
        "response (heuristic).",
        "prompt-turn.mdx#cancellation",
        checks=(
            "The same follow-up prompts: each answer must not carry the cancelled turn's message "
            "or tool call ids, or its text where a fresh session's answer to the same prompt does"
            " not."
        ),
        fix=(
            "End the cancelled turn's work (its tasks, its stream from the model) before the next"
            " turn starts, so none of it leaks into the next answer."
        ),
    ),
    # -- what the agent may ask of the client ---------------------------------------------
    Requirement(
        "ACP-CLIENTCAP-001",
        Tier.MANDATORY,
        "The agent calls no fs/* method when the client did not advertise file system access.",
        "file-system.mdx#checking-support",
        checks=(
            "A prompt with --fs-prompt (default fs) to a client offering no file system: the "
            "agent must call no fs/* method. Judged only when the same prompt, in a fresh process"
            " offered the file system, does call one; not exercised otherwise."
        ),
        fix=(
            "Read clientCapabilities.fs in initialize: call fs/* only when offered, and fall back"
            " to your own file access otherwise."
        ),
    ),
    Requirement(
        "ACP-CLIENTCAP-002",
        Tier.MANDATORY,
        "The agent calls no terminal/* method when the client did not advertise terminals.",
        "terminals.mdx#checking-support",
        checks=(
            "A prompt with --terminal-prompt (default terminal) to a client offering no "
            "terminals: the agent must call no terminal/* method. Judged only when the same "
            "prompt, offered terminals in a fresh process, does call one."
        ),
        fix=(
            "Read clientCapabilities.terminal in initialize: call terminal/* only when offered, "
            "and run commands yourself otherwise."
        ),
    ),
    Requirement(
        "ACP-CLIENTCAP-003",
        Tier.MANDATORY,
        "The agent sends no elicitation/create when the client did not advertise elicitation.",
        "elicitation.mdx",
        checks=(
            "A prompt with --elicitation-prompt (default elicit) to a client offering no "
            "elicitation: the agent must send no elicitation/create. Judged only when the same "
            "prompt, offered elicitation in a fresh process, does send one."
        ),
        fix=(
            "Read the client's elicitation capability in initialize: ask the user only when "
            "offered."
        ),
    ),
    Requirement(
        "ACP-TERMINAL-001",
        Tier.MANDATORY,
        "Every terminal the agent creates is released with terminal/release before the turn ends.",
        "terminals.mdx#releasing-terminals",
        checks=(
            "A prompt with --terminal-prompt, terminals offered (the suite simulates them); every"
            " terminal the agent creates must get terminal/release (at the latest by the end of a"
            " next prompt turn). Not exercised when it creates none."
        ),
        fix=(
            "Send terminal/release for every terminal you create once you have its output, before"
            " the turn ends."
        ),
    ),
    Requirement(
        "ACP-PLAN-001",
        Tier.ADVISORY,
        "Each plan update is the complete plan: an entry is not dropped from a later update of "
        "the same turn (heuristic).",
        "agent-plan.mdx#updating-the-plan",
        "#/$defs/Plan",
        checks=(
            "A prompt with --plan-prompt (default plan); no plan update of the turn may drop an "
            "entry an earlier one listed. Not exercised when the agent sends no plan."
        ),
        fix=(
            "Send the whole plan in every plan update (entries change status; they are not left "
            "out)."
        ),
    ),
    Requirement(
        "ACP-PERMISSION-001",
        Tier.ADVISORY,
        "A session/request_permission the client answers rejected does not end the turn with "
        "an error: the prompt is answered with a stop reason.",
        "tool-calls.mdx#requesting-permission",
        "#/$defs/RequestPermissionRequest",
        checks=(
            "A prompt with --tool-prompt (default tool); the client rejects every "
            "session/request_permission, and the prompt must still be answered with a stop "
            "reason, not an error. Not exercised when no permission is asked."
        ),
        fix=(
            "Treat a rejected permission as an outcome of the turn: skip the tool, tell the user,"
            " and end the turn with a stop reason."
        ),
    ),
    # -- modes and configuration options --------------------------------------------------
    Requirement(
        "ACP-MODES-001",
        Tier.CAPABILITY,
        "The session's currentModeId is one of its availableModes.",
        "session-modes.mdx",
        "#/$defs/SessionModeState",
        gate="session/new result: modes",
        checks=(
            "A session/new whose result lists modes: its currentModeId must be one of "
            "availableModes."
        ),
        fix="Set currentModeId to one of the modes you list.",
    ),
    Requirement(
        "ACP-MODES-002",
        Tier.CAPABILITY,
        "session/set_mode to another available mode succeeds.",
        "session-modes.mdx#setting-the-current-mode",
        "#/$defs/SetSessionModeResponse",
        gate="session/new result: modes",
        checks=(
            "A session/new whose result lists modes, then session/set_mode to another available "
            "mode; it must succeed."
        ),
        fix="Implement session/set_mode for every mode you list.",
    ),
    Requirement(
        "ACP-CONFIG-001",
        Tier.CAPABILITY,
        "Every configuration option has a default: a current value (for a select, one of its "
        "options).",
        "session-config-options.mdx",
        "#/$defs/SessionConfigOption",
        gate="session/new result: configOptions",
        checks=(
            "A session/new whose result lists configOptions: each must have a currentValue, a "
            "select's one of its options."
        ),
        fix="Give every configuration option a current value from its own options.",
    ),
    Requirement(
        "ACP-CONFIG-002",
        Tier.CAPABILITY,
        "session/set_config_option answers with the complete list of configuration options.",
        "session-config-options.mdx#setting-a-config-option",
        "#/$defs/SetSessionConfigOptionResponse",
        gate="session/new result: configOptions",
        checks=(
            "A session/new with a select configuration option, then session/set_config_option to "
            "another of its values; the answer must list every configuration option."
        ),
        fix=(
            "Answer session/set_config_option with the complete configOptions list, not only the "
            "option set."
        ),
    ),
    Requirement(
        "ACP-CONFIG-003",
        Tier.MANDATORY,
        'No configuration option has type "boolean" unless the client advertised support for it.',
        "session-config-options.mdx",
        checks=(
            "The configOptions of a session/new result (the client advertises no boolean "
            "support): none may have type boolean."
        ),
        fix=(
            "Offer boolean options only to a client that advertises support for them; use a "
            "select of two values otherwise."
        ),
    ),
    # -- extensibility --------------------------------------------------------------------
    Requirement(
        "ACP-EXT-001",
        Tier.MANDATORY,
        "A custom _-prefixed request gets a response (a result or an error).",
        "extensibility.mdx#custom-requests",
        checks=(
            "Sends the custom request _conformance/ping; it must get a response (a result or an "
            "error)."
        ),
        fix=(
            "Answer every request, custom _-prefixed ones too: -32601 for one you do not implement."
        ),
    ),
    # -- authentication -------------------------------------------------------------------
    Requirement(
        "ACP-AUTH-001",
        Tier.ADVISORY,
        "The advertised authMethods have unique ids (the schema describes the id as unique; "
        "no MUST says so).",
        "authentication.mdx",
        "#/$defs/AuthMethod",
        checks=(
            "The authMethods of the initialize result of the basic exchange: their ids must be "
            "unique."
        ),
        fix="Give each auth method its own id.",
    ),
    Requirement(
        "ACP-AUTH-002",
        Tier.MANDATORY,
        "No auth method of type terminal is advertised to a client that did not enable "
        "terminal authentication (clientCapabilities.auth.terminal).",
        "authentication.mdx",
        "#/$defs/AuthMethodTerminal",
        checks=(
            "The initialize of the basic exchange (without clientCapabilities.auth.terminal): no "
            "auth method may have type terminal."
        ),
        fix="Advertise terminal auth methods only when clientCapabilities.auth.terminal is true.",
    ),
    Requirement(
        "ACP-AUTH-003",
        Tier.CAPABILITY,
        "authenticate with the chosen method succeeds, and session/new works after it.",
        "authentication.mdx",
        "#/$defs/AuthenticateResponse",
        gate="--auth-method",
        checks=(
            "With --auth-method ID: initialize, authenticate with that method, then session/new; "
            "both must succeed."
        ),
        fix="Make authenticate with the method succeed, and serve session/new after it.",
    ),
    Requirement(
        "ACP-AUTH-004",
        Tier.CAPABILITY,
        "logout, when advertised (agentCapabilities.auth.logout), succeeds with an object "
        "result (exercised only with --allow-logout: it may revoke real credentials).",
        "authentication.mdx",
        "#/$defs/LogoutResponse",
        gate="agentCapabilities.auth.logout",
        checks=(
            "With --allow-logout: initialize (and authenticate, with --auth-method), then logout;"
            " it must succeed with an object result."
        ),
        fix="Answer logout with {} once logged out, or stop advertising auth.logout.",
    ),
    # -- errors and hygiene ---------------------------------------------------------------
    Requirement(
        "ACP-ERROR-001",
        Tier.ADVISORY,
        "Error messages are non-empty single lines.",
        "overview.mdx",
        "#/$defs/Error",
        checks=(
            "Sends an unknown method, session/new with cwd 42 and a prompt for an unknown "
            "session; every error answer must have a non-empty one-line message."
        ),
        fix=(
            "Give every error a short one-line message; put details (a traceback) in error.data "
            "or on stderr."
        ),
    ),
    Requirement(
        "ACP-SHUTDOWN-001",
        Tier.ADVISORY,
        "The agent exits within 5 s once its stdin is closed.",
        "transports.mdx#stdio",
        checks=(
            "At the end of the basic exchange the suite closes the agent's stdin; the process "
            "must exit within 5 s."
        ),
        fix=(
            "Exit when stdin reaches EOF: end the read loop, cancel background tasks, do not wait"
            " for them forever."
        ),
    ),
    Requirement(
        "ACP-SHUTDOWN-002",
        Tier.ADVISORY,
        "Once the agent has exited, no process of its process group is left behind.",
        "transports.mdx#stdio",
        checks=(
            "After that exit, no other process of the agent's process group may still be running "
            "(1 s later)."
        ),
        fix="Stop, and wait for, every child process you started before exiting.",
    ),
    Requirement(
        "ACP-SHUTDOWN-003",
        Tier.ADVISORY,
        "Once the agent has exited, the stdio MCP servers it started are gone too, even one "
        "that outlives its stdin (the suite's probe, with --linger).",
        "session-setup.mdx#mcp-servers",
        checks=(
            "A fresh process: session/new with a stdio MCP server that outlives its stdin (the "
            "probe with --linger), a prompt, then stdin closed; the agent must exit within 5 s "
            "and the server be gone 5 s after."
        ),
        fix=(
            "On exit, terminate the MCP servers you started (SIGTERM, then SIGKILL), not only "
            "close their stdin; do not wait for them to exit on their own."
        ),
    ),
    Requirement(
        "ACP-TIMING-001",
        Tier.ADVISORY,
        "initialize, session/new and an echo prompt are each answered within the suite's timeouts.",
        "overview.mdx",
        checks=(
            "Times the initialize, session/new and prompt of the basic exchange, each bounded by "
            "--startup-timeout or --timeout; the times are noted."
        ),
        fix=(
            "Answer within the bounds (start slow work after answering), or give a slow agent "
            "more time with --timeout and --startup-timeout."
        ),
    ),
    # -- spec gaps: recorded, not judged --------------------------------------------------
    Requirement(
        "ACP-INFO-PARSE-001",
        Tier.INFORMATIONAL,
        "What the agent does with a line that is not JSON (then whether it still answers).",
        "transports.mdx",
        checks=(
            "Sends a line that is not JSON (a cut-off request), notes what comes back, then "
            "whether the agent still answers."
        ),
        fix=(
            "Nothing to fix (recorded, not judged); a -32700 parse error answer, and going on, is"
            " the common behaviour."
        ),
    ),
    Requirement(
        "ACP-INFO-INVALIDREQ-001",
        Tier.INFORMATIONAL,
        "What the agent does with a JSON object that is not a JSON-RPC message (then whether it "
        "still answers).",
        "overview.mdx",
        checks='Sends {"foo": "bar"}, notes what comes back, then whether the agent still answers.',
        fix=(
            "Nothing to fix (recorded, not judged); a -32600 answer, and going on, is the common "
            "behaviour."
        ),
    ),
    Requirement(
        "ACP-INFO-BATCH-001",
        Tier.INFORMATIONAL,
        "What the agent does with a JSON-RPC batch (an array of requests).",
        "overview.mdx",
        checks=(
            "Sends a JSON-RPC batch of two session/new requests, notes what comes back, then "
            "whether the agent still answers."
        ),
        fix="Nothing to fix (recorded, not judged): ACP does not say whether batches are allowed.",
    ),
    Requirement(
        "ACP-INFO-UNKNOWNSESSION-001",
        Tier.INFORMATIONAL,
        "What the agent does with a prompt for a session id it never issued.",
        "prompt-turn.mdx",
        checks=(
            'Sends a prompt for the session id "conformance-no-such-session" and notes the answer.'
        ),
        fix=(
            "Nothing to fix (recorded, not judged); an error (resource not found) is the common "
            "answer."
        ),
    ),
    Requirement(
        "ACP-INFO-CONCURRENT-001",
        Tier.INFORMATIONAL,
        "What the agent does with a second prompt while one runs in the same session.",
        "prompt-turn.mdx",
        checks=(
            "Sends a --cancel-prompt prompt, then a second prompt in the same session while the "
            "first runs, and notes what each gets."
        ),
        fix="Nothing to fix (recorded, not judged): the spec leaves it open.",
    ),
    Requirement(
        "ACP-INFO-IDLECANCEL-001",
        Tier.INFORMATIONAL,
        "What the agent does with session/cancel for an idle session (then whether it still "
        "takes a prompt).",
        "prompt-turn.mdx#cancellation",
        checks=(
            "Sends session/cancel for an idle session, notes any reaction, then whether the "
            "session still takes a prompt."
        ),
        fix="Nothing to fix (recorded, not judged); ignoring it is the common behaviour.",
    ),
    Requirement(
        "ACP-INFO-RELATIVECWD-001",
        Tier.INFORMATIONAL,
        "What the agent does with session/new given a relative cwd (the spec requires "
        "absolute paths of the client).",
        "session-setup.mdx",
        checks='Sends session/new with the relative cwd "relative/dir" and notes the answer.',
        fix=(
            "Nothing to fix (recorded, not judged); refusing it with invalid params is the common"
            " answer."
        ),
    ),
    Requirement(
        "ACP-STDERR-001",
        Tier.INFORMATIONAL,
        "How much the agent writes to stderr during a basic exchange.",
        "transports.mdx#stdio",
        checks="Counts the bytes the agent writes to stderr during the basic exchange.",
        fix="Nothing to fix (recorded, not judged); stderr is the place for logs.",
    ),
)

REQUIREMENTS: Final[dict[str, Requirement]] = {r.id: r for r in _ALL}
if len(REQUIREMENTS) != len(_ALL):  # pragma: no cover - caught by the meta-tests
    raise RuntimeError("duplicate requirement id")


def requirement(requirement_id: str) -> Requirement:
    """The requirement ``requirement_id``; a ``KeyError`` naming the known ids otherwise."""
    try:
        return REQUIREMENTS[requirement_id]
    except KeyError:
        raise KeyError(f"unknown requirement {requirement_id!r}") from None
