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
    "REQUIREMENTS",
    "SPEC_COMMIT",
    "Requirement",
    "Tier",
    "requirement",
)

SPEC_COMMIT: Final = "b7f0005493b98de32fabee3e9540e2b64da68535"
"""The agent-client-protocol commit the vendored schema and every citation refer to."""

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
    ),
    Requirement(
        "ACP-TRANSPORT-002",
        Tier.MANDATORY,
        "The agent's stdout is valid UTF-8.",
        "transports.mdx#stdio",
    ),
    Requirement(
        "ACP-TRANSPORT-003",
        Tier.MANDATORY,
        "Messages are delimited by newlines and contain no embedded newline (a message is "
        "never spread over several lines).",
        "transports.mdx#stdio",
    ),
    # -- JSON-RPC -------------------------------------------------------------------------
    Requirement(
        "ACP-JSONRPC-001",
        Tier.MANDATORY,
        "A response's id echoes the request's id exactly, for integer and string ids.",
        "overview.mdx",
        "#/$defs/RequestId",
    ),
    Requirement(
        "ACP-JSONRPC-002",
        Tier.MANDATORY,
        'A response carries exactly one of "result" and "error"; an error has an integer '
        '"code" and a string "message".',
        "overview.mdx",
        "#/$defs/Error",
    ),
    Requirement(
        "ACP-JSONRPC-003",
        Tier.MANDATORY,
        "Notifications never receive a response, success or error (session/cancel, an "
        "unknown _-prefixed notification).",
        "overview.mdx",
    ),
    Requirement(
        "ACP-JSONRPC-004",
        Tier.ADVISORY,
        "An unknown method, whether _-prefixed (a custom request) or not, is answered with "
        "error -32601 (method not found).",
        "extensibility.mdx#custom-requests",
        "#/$defs/ErrorCode",
    ),
    Requirement(
        "ACP-JSONRPC-005",
        Tier.ADVISORY,
        "After an erroneous request the connection stays usable: the next request succeeds.",
        "overview.mdx",
    ),
    # -- initialization -------------------------------------------------------------------
    Requirement(
        "ACP-INIT-001",
        Tier.MANDATORY,
        "initialize succeeds with a result carrying the chosen protocolVersion as a JSON "
        "integer (its schema validity is ACP-SCHEMA-001's).",
        "initialization.mdx",
        "#/$defs/InitializeResponse",
    ),
    Requirement(
        "ACP-INIT-002",
        Tier.MANDATORY,
        "When the client requests protocol version 1, the agent responds with 1.",
        "initialization.mdx#protocol-version",
    ),
    Requirement(
        "ACP-INIT-003",
        Tier.MANDATORY,
        "When the client requests a version the agent does not support (65535), the agent "
        "responds successfully with the latest version it supports, not the requested one.",
        "initialization.mdx#protocol-version",
    ),
    Requirement(
        "ACP-INIT-004",
        Tier.ADVISORY,
        "The initialize result names the agent: agentInfo with name and version.",
        "initialization.mdx#implementation-information",
        "#/$defs/Implementation",
    ),
    Requirement(
        "ACP-INIT-005",
        Tier.ADVISORY,
        "A session method sent before initialize is not served: session/new as the first "
        "message is answered with an error (the project's endpoint answers -32600), not a "
        'session. A spec gap: "Before a Session can be created, Clients MUST initialize the '
        'connection", and nothing says what the agent does when one does not, hence advisory.',
        "initialization.mdx",
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
    ),
    # -- sessions -------------------------------------------------------------------------
    Requirement(
        "ACP-SESSION-001",
        Tier.MANDATORY,
        "session/new with an absolute cwd and no MCP servers succeeds with a non-empty sessionId.",
        "session-setup.mdx#creating-a-session",
        "#/$defs/NewSessionResponse",
    ),
    Requirement(
        "ACP-SESSION-002",
        Tier.MANDATORY,
        "Two session/new calls on one connection return different session ids.",
        "session-setup.mdx#creating-a-session",
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
    ),
    Requirement(
        "ACP-PATHS-001",
        Tier.MANDATORY,
        "Every file path the agent sends (fs/* paths, tool call locations, diffs, terminal "
        "cwd) is absolute.",
        "overview.mdx#argument-requirements",
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
    ),
    Requirement(
        "ACP-MCP-002",
        Tier.ADVISORY,
        '"Agents SHOULD connect to all MCP servers specified by the Client": given two stdio '
        "MCP servers in session/new, the agent sends each an MCP initialize (by the end of the "
        "first prompt turn, plus a short grace). An agent that connects to none is judged by "
        "ACP-MCP-001.",
        "session-setup.mdx#mcp-servers",
    ),
    Requirement(
        "ACP-MCP-005",
        Tier.MANDATORY,
        "A stdio MCP server is launched as session/new describes it: with the entry's env "
        'variables set ("Environment variables to set when launching the server"; servers '
        "get their credentials this way). Part of the stdio support every agent MUST have.",
        "session-setup.mdx#stdio-transport",
        "#/$defs/McpServerStdio",
    ),
    Requirement(
        "ACP-MCP-003",
        Tier.CAPABILITY,
        "An agent advertising mcpCapabilities.http accepts an HTTP MCP server in session/new "
        "(the suite serves one on 127.0.0.1).",
        "session-setup.mdx#mcp-servers",
        "#/$defs/McpServerHttp",
        gate="agentCapabilities.mcpCapabilities.http",
    ),
    Requirement(
        "ACP-MCP-004",
        Tier.CAPABILITY,
        "An agent advertising mcpCapabilities.sse accepts an SSE MCP server in session/new "
        "(the suite serves one on 127.0.0.1).",
        "session-setup.mdx#mcp-servers",
        "#/$defs/McpServerSse",
        gate="agentCapabilities.mcpCapabilities.sse",
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
    ),
    Requirement(
        "ACP-LOAD-002",
        Tier.CAPABILITY,
        "session/load (in a new agent process) replays the whole conversation as "
        "session/update notifications, the user's earlier prompt included, all before the "
        "response.",
        "session-setup.mdx#loading-sessions",
        gate="agentCapabilities.loadSession",
    ),
    Requirement(
        "ACP-LOAD-003",
        Tier.ADVISORY,
        "The result of session/load (in a new agent process) is an object ({}), not null.",
        "session-setup.mdx#loading-sessions",
        "#/$defs/LoadSessionResponse",
        gate="agentCapabilities.loadSession",
    ),
    Requirement(
        "ACP-LOAD-004",
        Tier.ADVISORY,
        "session/load of a session id that never existed is an error, not a success.",
        "session-setup.mdx#loading-sessions",
        gate="agentCapabilities.loadSession",
    ),
    Requirement(
        "ACP-ADDDIRS-001",
        Tier.CAPABILITY,
        "session/new with an absolute additionalDirectories entry is accepted, and the session "
        "takes a prompt.",
        "session-setup.mdx",
        "#/$defs/SessionAdditionalDirectoriesCapabilities",
        gate="agentCapabilities.sessionCapabilities.additionalDirectories",
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
    ),
    Requirement(
        "ACP-RESUME-002",
        Tier.CAPABILITY,
        "session/resume (in a new agent process) does not replay the conversation: no "
        "history update for the session arrives before its response.",
        "session-setup.mdx#resuming-sessions",
        gate="agentCapabilities.sessionCapabilities.resume",
    ),
    Requirement(
        "ACP-LIST-001",
        Tier.CAPABILITY,
        "session/list returns a sessions array that includes a session just created (filtered "
        "by its cwd).",
        "session-list.mdx",
        "#/$defs/ListSessionsResponse",
        gate="agentCapabilities.sessionCapabilities.list",
    ),
    Requirement(
        "ACP-LIST-002",
        Tier.CAPABILITY,
        "session/list returns an empty sessions array when no session matches (a cwd no "
        "session uses).",
        "session-list.mdx",
        gate="agentCapabilities.sessionCapabilities.list",
    ),
    Requirement(
        "ACP-LIST-003",
        Tier.ADVISORY,
        'session/list with an invalid cursor is an error: "Agents SHOULD return an error if '
        'the cursor is invalid" (a SHOULD, so advisory: a warning, never a verdict).',
        "session-list.mdx#pagination",
        gate="agentCapabilities.sessionCapabilities.list",
    ),
    Requirement(
        "ACP-DELETE-001",
        Tier.CAPABILITY,
        "session/delete of an existing session succeeds (and it is no longer listed, when the "
        "agent lists sessions).",
        "session-delete.mdx",
        "#/$defs/DeleteSessionResponse",
        gate="agentCapabilities.sessionCapabilities.delete",
    ),
    Requirement(
        "ACP-DELETE-002",
        Tier.ADVISORY,
        "Deleting a session that never existed succeeds silently.",
        "session-delete.mdx",
        gate="agentCapabilities.sessionCapabilities.delete",
    ),
    Requirement(
        "ACP-CLOSE-001",
        Tier.CAPABILITY,
        "session/close of an idle session succeeds.",
        "session-setup.mdx#closing-sessions",
        "#/$defs/CloseSessionResponse",
        gate="agentCapabilities.sessionCapabilities.close",
    ),
    Requirement(
        "ACP-CLOSE-002",
        Tier.CAPABILITY,
        "session/close during a running prompt cancels it as session/cancel would: the prompt "
        'is answered with stopReason "cancelled".',
        "session-setup.mdx#closing-sessions",
        gate="agentCapabilities.sessionCapabilities.close",
    ),
    # -- prompt turn ----------------------------------------------------------------------
    Requirement(
        "ACP-PROMPT-001",
        Tier.MANDATORY,
        "A text-only session/prompt is answered with a result whose stopReason is one of the "
        "defined StopReason values.",
        "prompt-turn.mdx#4-check-for-completion",
        "#/$defs/StopReason",
    ),
    Requirement(
        "ACP-PROMPT-002",
        Tier.MANDATORY,
        "Every session/update sent during a prompt turn carries the prompted session's id.",
        "prompt-turn.mdx#3-agent-reports-output",
        "#/$defs/SessionNotification",
    ),
    Requirement(
        "ACP-PROMPT-003",
        Tier.ADVISORY,
        "A prompt with a resource_link content block alongside text is accepted (the docs "
        "disagree on whether this is a MUST).",
        "initialization.mdx#prompt-capabilities",
        "#/$defs/ResourceLink",
    ),
    Requirement(
        "ACP-PROMPT-004",
        Tier.ADVISORY,
        "A prompt of 1 MiB of text is answered (with any stop reason or an error), and the "
        "agent keeps working.",
        "prompt-turn.mdx",
    ),
    Requirement(
        "ACP-PROMPTCAP-001",
        Tier.CAPABILITY,
        "With promptCapabilities.image, a prompt with an image block is accepted.",
        "content.mdx#image-content",
        "#/$defs/ImageContent",
        gate="agentCapabilities.promptCapabilities.image",
    ),
    Requirement(
        "ACP-PROMPTCAP-002",
        Tier.CAPABILITY,
        "With promptCapabilities.audio, a prompt with an audio block is accepted.",
        "content.mdx#audio-content",
        "#/$defs/AudioContent",
        gate="agentCapabilities.promptCapabilities.audio",
    ),
    Requirement(
        "ACP-PROMPTCAP-003",
        Tier.CAPABILITY,
        "With promptCapabilities.embeddedContext, a prompt with an embedded resource is accepted.",
        "content.mdx#embedded-resource",
        "#/$defs/EmbeddedResource",
        gate="agentCapabilities.promptCapabilities.embeddedContext",
    ),
    Requirement(
        "ACP-META-001",
        Tier.ADVISORY,
        "A session/prompt carrying _meta is accepted.",
        "extensibility.mdx#the-_meta-field",
    ),
    # -- cancellation ---------------------------------------------------------------------
    Requirement(
        "ACP-CANCEL-001",
        Tier.MANDATORY,
        "After session/cancel during a running prompt, the prompt is answered with a result "
        'whose stopReason is "cancelled", not an error, in each of several turns cancelled at '
        "different moments (right after the prompt, at its first update, later).",
        "prompt-turn.mdx#cancellation",
    ),
    Requirement(
        "ACP-CANCEL-002",
        Tier.MANDATORY,
        "Every update of a cancelled turn (message, thought, tool call, plan, usage, any kind "
        "but the session's state) arrives before the prompt's response; none arrives after it, "
        "in any of several cancelled turns (updates of the session's state: available "
        "commands, mode, config options, session info, may come at any time).",
        "prompt-turn.mdx#cancellation",
    ),
    Requirement(
        "ACP-CANCEL-003",
        Tier.ADVISORY,
        "After a cancelled turn the session takes the next prompt: it is answered with a stop "
        'reason other than "cancelled" (it was never cancelled) and, when the same prompt gets '
        "an answer in a fresh session, with at least one update.",
        "prompt-turn.mdx#cancellation",
    ),
    Requirement(
        "ACP-CANCEL-004",
        Tier.ADVISORY,
        "The turn after a cancelled one gets its own answer: it does not carry the cancelled "
        "turn's content (its message or tool call ids, or its text where the same prompt in a "
        "fresh session says no such thing). The cancelled turn's updates all come before its "
        "response (heuristic).",
        "prompt-turn.mdx#cancellation",
    ),
    # -- what the agent may ask of the client ---------------------------------------------
    Requirement(
        "ACP-CLIENTCAP-001",
        Tier.MANDATORY,
        "The agent calls no fs/* method when the client did not advertise file system access.",
        "file-system.mdx#checking-support",
    ),
    Requirement(
        "ACP-CLIENTCAP-002",
        Tier.MANDATORY,
        "The agent calls no terminal/* method when the client did not advertise terminals.",
        "terminals.mdx#checking-support",
    ),
    Requirement(
        "ACP-CLIENTCAP-003",
        Tier.MANDATORY,
        "The agent sends no elicitation/create when the client did not advertise elicitation.",
        "elicitation.mdx",
    ),
    Requirement(
        "ACP-TERMINAL-001",
        Tier.MANDATORY,
        "Every terminal the agent creates is released with terminal/release before the turn ends.",
        "terminals.mdx#releasing-terminals",
    ),
    Requirement(
        "ACP-PLAN-001",
        Tier.ADVISORY,
        "Each plan update is the complete plan: an entry is not dropped from a later update of "
        "the same turn (heuristic).",
        "agent-plan.mdx#updating-the-plan",
        "#/$defs/Plan",
    ),
    Requirement(
        "ACP-PERMISSION-001",
        Tier.ADVISORY,
        "A session/request_permission the client answers rejected does not end the turn with "
        "an error: the prompt is answered with a stop reason.",
        "tool-calls.mdx#requesting-permission",
        "#/$defs/RequestPermissionRequest",
    ),
    # -- modes and configuration options --------------------------------------------------
    Requirement(
        "ACP-MODES-001",
        Tier.CAPABILITY,
        "The session's currentModeId is one of its availableModes.",
        "session-modes.mdx",
        "#/$defs/SessionModeState",
        gate="session/new result: modes",
    ),
    Requirement(
        "ACP-MODES-002",
        Tier.CAPABILITY,
        "session/set_mode to another available mode succeeds.",
        "session-modes.mdx#setting-the-current-mode",
        "#/$defs/SetSessionModeResponse",
        gate="session/new result: modes",
    ),
    Requirement(
        "ACP-CONFIG-001",
        Tier.CAPABILITY,
        "Every configuration option has a default: a current value (for a select, one of its "
        "options).",
        "session-config-options.mdx",
        "#/$defs/SessionConfigOption",
        gate="session/new result: configOptions",
    ),
    Requirement(
        "ACP-CONFIG-002",
        Tier.CAPABILITY,
        "session/set_config_option answers with the complete list of configuration options.",
        "session-config-options.mdx#setting-a-config-option",
        "#/$defs/SetSessionConfigOptionResponse",
        gate="session/new result: configOptions",
    ),
    Requirement(
        "ACP-CONFIG-003",
        Tier.MANDATORY,
        'No configuration option has type "boolean" unless the client advertised support for it.',
        "session-config-options.mdx",
    ),
    # -- extensibility --------------------------------------------------------------------
    Requirement(
        "ACP-EXT-001",
        Tier.MANDATORY,
        "A custom _-prefixed request gets a response (a result or an error).",
        "extensibility.mdx#custom-requests",
    ),
    # -- authentication -------------------------------------------------------------------
    Requirement(
        "ACP-AUTH-001",
        Tier.ADVISORY,
        "The advertised authMethods have unique ids (the schema describes the id as unique; "
        "no MUST says so).",
        "authentication.mdx",
        "#/$defs/AuthMethod",
    ),
    Requirement(
        "ACP-AUTH-002",
        Tier.MANDATORY,
        "No auth method of type terminal is advertised to a client that did not enable "
        "terminal authentication (clientCapabilities.auth.terminal).",
        "authentication.mdx",
        "#/$defs/AuthMethodTerminal",
    ),
    Requirement(
        "ACP-AUTH-003",
        Tier.CAPABILITY,
        "authenticate with the chosen method succeeds, and session/new works after it.",
        "authentication.mdx",
        "#/$defs/AuthenticateResponse",
        gate="--auth-method",
    ),
    Requirement(
        "ACP-AUTH-004",
        Tier.CAPABILITY,
        "logout, when advertised (agentCapabilities.auth.logout), succeeds with an object "
        "result (exercised only with --allow-logout: it may revoke real credentials).",
        "authentication.mdx",
        "#/$defs/LogoutResponse",
        gate="agentCapabilities.auth.logout",
    ),
    # -- errors and hygiene ---------------------------------------------------------------
    Requirement(
        "ACP-ERROR-001",
        Tier.ADVISORY,
        "Error messages are non-empty single lines.",
        "overview.mdx",
        "#/$defs/Error",
    ),
    Requirement(
        "ACP-SHUTDOWN-001",
        Tier.ADVISORY,
        "The agent exits within 5 s once its stdin is closed.",
        "transports.mdx#stdio",
    ),
    Requirement(
        "ACP-SHUTDOWN-002",
        Tier.ADVISORY,
        "Once the agent has exited, no process of its process group is left behind.",
        "transports.mdx#stdio",
    ),
    Requirement(
        "ACP-SHUTDOWN-003",
        Tier.ADVISORY,
        "Once the agent has exited, the stdio MCP servers it started are gone too, even one "
        "that outlives its stdin (the suite's probe, with --linger).",
        "session-setup.mdx#mcp-servers",
    ),
    Requirement(
        "ACP-TIMING-001",
        Tier.ADVISORY,
        "initialize, session/new and an echo prompt are each answered within the suite's timeouts.",
        "overview.mdx",
    ),
    # -- spec gaps: recorded, not judged --------------------------------------------------
    Requirement(
        "ACP-INFO-PARSE-001",
        Tier.INFORMATIONAL,
        "What the agent does with a line that is not JSON (then whether it still answers).",
        "transports.mdx",
    ),
    Requirement(
        "ACP-INFO-INVALIDREQ-001",
        Tier.INFORMATIONAL,
        "What the agent does with a JSON object that is not a JSON-RPC message (then whether it "
        "still answers).",
        "overview.mdx",
    ),
    Requirement(
        "ACP-INFO-BATCH-001",
        Tier.INFORMATIONAL,
        "What the agent does with a JSON-RPC batch (an array of requests).",
        "overview.mdx",
    ),
    Requirement(
        "ACP-INFO-UNKNOWNSESSION-001",
        Tier.INFORMATIONAL,
        "What the agent does with a prompt for a session id it never issued.",
        "prompt-turn.mdx",
    ),
    Requirement(
        "ACP-INFO-CONCURRENT-001",
        Tier.INFORMATIONAL,
        "What the agent does with a second prompt while one runs in the same session.",
        "prompt-turn.mdx",
    ),
    Requirement(
        "ACP-INFO-IDLECANCEL-001",
        Tier.INFORMATIONAL,
        "What the agent does with session/cancel for an idle session (then whether it still "
        "takes a prompt).",
        "prompt-turn.mdx#cancellation",
    ),
    Requirement(
        "ACP-INFO-RELATIVECWD-001",
        Tier.INFORMATIONAL,
        "What the agent does with session/new given a relative cwd (the spec requires "
        "absolute paths of the client).",
        "session-setup.mdx",
    ),
    Requirement(
        "ACP-STDERR-001",
        Tier.INFORMATIONAL,
        "How much the agent writes to stderr during a basic exchange.",
        "transports.mdx#stdio",
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
