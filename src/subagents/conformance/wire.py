"""The suite's raw NDJSON harness: one agent process, every byte recorded.

Deliberately not the typed client: :class:`AgentWire` can write malformed traffic, sees every
line the agent writes (valid or not) and keeps a byte-exact transcript. It still plays a
proper client: it answers the agent's requests (permission, fs, terminal) as the check's
:class:`ClientSide` says, and answers -32601 to anything the check did not advertise,
recording the attempt.

Each line the agent writes becomes a :class:`Line`: its raw bytes, the decoded message when
there is one, and the problems found (not UTF-8, not JSON, not a JSON-RPC message, schema
violations, fields the schema does not define).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import anyio.abc

from ..transports.process import AgentProcess, ProcessExit, open_agent_process
from .schema import shared_validator

__all__ = (
    "AgentGone",
    "AgentWire",
    "ClientSide",
    "Line",
    "Response",
    "WireError",
    "WireTimeout",
    "open_wire",
)

JSON = Any
MAX_LINE_BYTES = 64 * 1024 * 1024

_Key = tuple[type[object], object]
"""A request id as matched: by type as well as value (``1`` and ``"1"`` are different ids)."""


def _key(request_id: JSON) -> _Key:
    return (type(cast(object, request_id)), request_id)


class WireError(Exception):
    """The exchange with the agent broke off; the message says how."""


class WireTimeout(WireError, TimeoutError):
    """The agent did not answer within the bound."""


class AgentGone(WireError):
    """The agent no longer reads its stdin (it exited or closed it)."""


@dataclass
class Line:
    """One line the agent wrote to stdout (or one the harness wrote to its stdin)."""

    t: float
    """Seconds since the process started."""
    direction: Literal["agent", "client"]
    raw: bytes
    message: JSON = None
    """The decoded JSON value (``None`` when the line is not JSON)."""
    utf8: bool = True
    json_ok: bool = True
    jsonrpc_problem: str | None = None
    schema_errors: list[str] = field(default_factory=list[str])
    unknown_fields: list[str] = field(default_factory=list[str])
    unstable_fields: list[str] = field(default_factory=list[str])
    """Fields the stable schema lacks but the protocol's unstable schema defines."""

    @property
    def is_message(self) -> bool:
        return self.json_ok and self.jsonrpc_problem is None

    def text(self, limit: int = 2000) -> str:
        body = self.raw.decode("utf-8", "replace")
        if len(body) > limit:
            body = body[:limit] + f"... ({len(self.raw)} bytes)"
        arrow = "<-" if self.direction == "agent" else "->"
        return f"{self.t:8.3f} {arrow} {body}"


@dataclass
class Response:
    """The agent's answer to one request."""

    id: JSON
    message: dict[str, Any]
    line: Line

    @property
    def ok(self) -> bool:
        return "result" in self.message and "error" not in self.message

    @property
    def result(self) -> JSON:
        return self.message.get("result")

    @property
    def error(self) -> dict[str, Any] | None:
        error = self.message.get("error")
        return cast(dict[str, Any], error) if isinstance(error, dict) else None

    @property
    def error_code(self) -> int | None:
        error = self.error
        code = error.get("code") if error else None
        return code if isinstance(code, int) else None

    def describe(self) -> str:
        if self.ok:
            return f"result {json.dumps(self.result)[:300]}"
        error = self.error or {}
        return f"error {error.get('code')}: {error.get('message')}"


@dataclass
class ClientSide:
    """What the harness advertises as a client, and how it answers the agent's requests."""

    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False
    permission: Literal["allow", "reject", "cancelled"] = "reject"
    elicitation: bool = False
    """Advertise form elicitation (``elicitation.form``); every ``elicitation/create`` is
    answered ``decline``."""

    def capabilities(self) -> dict[str, Any]:
        capabilities: dict[str, Any] = {
            "fs": {"readTextFile": self.read_text_file, "writeTextFile": self.write_text_file},
            "terminal": self.terminal,
        }
        if self.elicitation:
            capabilities["elicitation"] = {"form": {}}
        return capabilities


def _jsonrpc_problem(value: JSON) -> str | None:
    if isinstance(value, list):
        return "a JSON array (batch), not a single message"
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}, not a JSON-RPC object"
    message = cast(dict[str, Any], value)
    if message.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method is not a string"
        if "id" in message and not isinstance(message["id"], int | str):
            return "request id is neither an integer nor a string"
        return None
    if "id" not in message:
        return "neither a request, a notification nor a response"
    if ("result" in message) == ("error" in message):
        return 'a response must carry exactly one of "result" and "error"'
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict):
            return "error is not an object"
        error = cast(dict[str, Any], error)
        if not isinstance(error.get("code"), int) or isinstance(error.get("code"), bool):
            return "error code is not an integer"
        if not isinstance(error.get("message"), str):
            return "error message is not a string"
    return None


class AgentWire:
    """A raw connection to one agent process. Made by :func:`open_wire`."""

    def __init__(
        self,
        process: AgentProcess,
        client: ClientSide,
        cwd: Path,
        timeout: float,
        task_group: anyio.abc.TaskGroup,
    ):
        self.process = process
        self.client = client
        self.cwd = cwd
        """The check's private directory (absolute): session cwd and fs root (not the process's
        working directory, which is the caller's)."""
        self.timeout = timeout
        self.lines: list[Line] = []
        """Everything exchanged, in order (both directions)."""
        self._start = time.monotonic()
        self._ids = itertools.count(1)
        self._pending: dict[_Key, tuple[str, anyio.Event]] = {}
        self._answers: dict[_Key, Response] = {}
        self._changed = anyio.Event()
        self._eof = False
        self._tg = task_group
        """Runs the reader and the answers to the agent's requests."""
        self.agent_requests: list[dict[str, Any]] = []
        """Requests the agent sent (any method)."""
        self.unadvertised_calls: list[str] = []
        """Methods the agent called that this client did not advertise."""
        self.unmatched_responses: list[Line] = []
        """Responses whose id matches no request of ours (e.g. answers to notifications)."""
        self.terminals: dict[str, dict[str, Any]] = {}
        """Terminals the agent created: id -> {"session": ..., "released": bool}."""
        self.mcp_started: list[str] = []

    # -- reading ---------------------------------------------------------------------------

    def _now(self) -> float:
        return time.monotonic() - self._start

    def agent_lines(self) -> list[Line]:
        return [line for line in self.lines if line.direction == "agent"]

    def messages(self) -> list[dict[str, Any]]:
        """Every well-formed message the agent sent, in order."""
        return [
            cast(dict[str, Any], line.message)
            for line in self.lines
            if line.direction == "agent" and line.is_message
        ]

    def notifications(self, method: str = "session/update") -> list[dict[str, Any]]:
        return [m for m in self.messages() if m.get("method") == method and "id" not in m]

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """``params`` of every ``session/update`` (for one session when given)."""
        found: list[dict[str, Any]] = []
        for message in self.notifications():
            params = message.get("params")
            if isinstance(params, dict):
                params = cast(dict[str, Any], params)
                if session_id is None or params.get("sessionId") == session_id:
                    found.append(params)
        return found

    @property
    def eof(self) -> bool:
        return self._eof

    async def read_agent(self) -> None:
        """Read the agent's stdout into :attr:`lines` until it ends, answering its requests
        (a task of the wire's task group, started by :func:`open_wire`)."""
        buffer = bytearray()
        stdout = self.process.stdout
        try:
            while True:
                try:
                    chunk = await stdout.receive(65536)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                buffer += chunk
                while True:
                    end = buffer.find(b"\n")
                    if end < 0:
                        if len(buffer) > MAX_LINE_BYTES:
                            self._receive_line(bytes(buffer[:MAX_LINE_BYTES]))
                            buffer.clear()
                        break
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    self._receive_line(line)
            if buffer.strip():
                self._receive_line(bytes(buffer))
        finally:
            self._eof = True
            self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _receive_line(self, raw: bytes) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            return
        line = Line(self._now(), "agent", raw)
        self.lines.append(line)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            line.utf8 = False
            line.json_ok = False
            self._notify()
            return
        try:
            line.message = json.loads(text)
        except ValueError:
            line.json_ok = False
            self._notify()
            return
        line.jsonrpc_problem = _jsonrpc_problem(line.message)
        if line.jsonrpc_problem is None:
            self._dispatch(line, cast(dict[str, Any], line.message))
        self._notify()

    def _dispatch(self, line: Line, message: dict[str, Any]) -> None:
        validator = shared_validator()
        if "method" in message:
            findings = validator.incoming(message)
            line.schema_errors.extend(findings.errors)
            line.unknown_fields.extend(findings.unknown_fields)
            line.unstable_fields.extend(findings.unstable_fields)
            if "id" in message:
                self.agent_requests.append(message)
                self._tg.start_soon(self._answer_agent, message)
            return
        key = _key(message["id"])
        pending = self._pending.pop(key, None)
        if pending is None:
            self.unmatched_responses.append(line)
            return
        method, event = pending
        findings = validator.response(method, message)
        line.schema_errors.extend(findings.errors)
        line.unknown_fields.extend(findings.unknown_fields)
        line.unstable_fields.extend(findings.unstable_fields)
        self._answers[key] = Response(message["id"], message, line)
        event.set()

    # -- answering the agent ---------------------------------------------------------------

    async def _answer_agent(self, message: dict[str, Any]) -> None:
        method: str = message["method"]
        params = message.get("params")
        params = cast(dict[str, Any], params) if isinstance(params, dict) else {}
        client = self.client
        result: JSON = None
        error: dict[str, Any] | None = None
        if method == "session/request_permission":
            result = {"outcome": self._permission_outcome(params)}
        elif method == "fs/read_text_file" and client.read_text_file:
            path = Path(str(params.get("path", "")))
            try:
                result = {"content": await anyio.Path(path).read_text(encoding="utf-8")}
            except OSError as exc:
                error = {"code": -32002, "message": f"cannot read {path}: {exc.strerror}"}
        elif method == "fs/write_text_file" and client.write_text_file:
            path = Path(str(params.get("path", "")))
            if path.is_absolute() and path.resolve().is_relative_to(self.cwd.resolve()):
                await anyio.Path(path).write_text(str(params.get("content", "")), encoding="utf-8")
                result = {}
            else:
                error = {"code": -32602, "message": f"path outside the check's directory: {path}"}
        elif method.startswith("terminal/") and client.terminal:
            result, error = self._terminal(method, params)
        elif method == "elicitation/create" and client.elicitation:
            result = {"action": "decline"}
        else:
            if method.startswith(("fs/", "terminal/", "elicitation/")):
                self.unadvertised_calls.append(method)
            error = {"code": -32601, "message": f"method not found: {method}"}
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if error is not None:
            answer["error"] = error
        else:
            answer["result"] = result
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self.send(answer)

    def _permission_outcome(self, params: dict[str, Any]) -> dict[str, Any]:
        policy = self.client.permission
        if policy == "cancelled":
            return {"outcome": "cancelled"}
        wanted = (
            ("allow_once", "allow_always")
            if policy == "allow"
            else ("reject_once", "reject_always")
        )
        options = params.get("options")
        for option in cast(list[Any], options) if isinstance(options, list) else []:
            if isinstance(option, dict):
                option = cast(dict[str, Any], option)
                if option.get("kind") in wanted:
                    return {"outcome": "selected", "optionId": option.get("optionId")}
        return {"outcome": "cancelled"}

    def _terminal(self, method: str, params: dict[str, Any]) -> tuple[JSON, dict[str, Any] | None]:
        terminal_id = params.get("terminalId")
        if method == "terminal/create":
            new_id = f"term-{len(self.terminals) + 1}"
            self.terminals[new_id] = {
                "session": params.get("sessionId"),
                "released": False,
                "cwd": params.get("cwd"),
            }
            return {"terminalId": new_id}, None
        if not isinstance(terminal_id, str) or terminal_id not in self.terminals:
            return None, {"code": -32002, "message": f"unknown terminal {terminal_id!r}"}
        if method == "terminal/output":
            return {"output": "", "truncated": False, "exitStatus": {"exitCode": 0}}, None
        if method == "terminal/wait_for_exit":
            return {"exitCode": 0}, None
        if method == "terminal/release":
            self.terminals[terminal_id]["released"] = True
            return {}, None
        if method == "terminal/kill":
            return {}, None
        return None, {"code": -32601, "message": f"method not found: {method}"}

    # -- writing ---------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (the transcript records them)."""
        self.lines.append(Line(self._now(), "client", data.rstrip(b"\n")))
        try:
            await self.process.stdin.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            exit_ = await self._exit_soon()
            how = exit_.describe() if exit_ else "it closed its stdin"
            raise AgentGone(f"cannot write to the agent: {how}") from exc

    async def send(self, message: JSON) -> None:
        await self.send_raw(json.dumps(message, ensure_ascii=False).encode() + b"\n")

    async def notify(self, method: str, params: JSON = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    def answered(self, request_id: JSON) -> bool:
        """Whether the agent has answered request ``request_id``."""
        return _key(request_id) in self._answers

    def pending_methods(self) -> list[str]:
        """Methods of the requests still unanswered."""
        return sorted(method for method, _ in self._pending.values())

    def next_id(self) -> int:
        return next(self._ids)

    async def start_request(self, method: str, params: JSON = None, *, id: JSON = None) -> JSON:
        """Send a request without waiting; returns its id (see :meth:`wait_response`)."""
        request_id = self.next_id() if id is None else id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._pending[_key(request_id)] = (method, anyio.Event())
        await self.send(message)
        return request_id

    async def wait_response(self, request_id: JSON, timeout: float | None = None) -> Response:
        """The agent's answer to request ``request_id``; :class:`WireTimeout` if none comes."""
        key = _key(request_id)
        limit = self.timeout if timeout is None else timeout
        with anyio.move_on_after(limit):
            while key not in self._answers:
                if self._eof:
                    break
                pending = self._pending.get(key)
                if pending is None:
                    break
                changed = self._changed
                await changed.wait()
        answer = self._answers.get(key)
        if answer is not None:
            return answer
        if self._eof:
            exit_ = await self._exit_soon()
            raise WireTimeout(
                f"the agent closed stdout without answering request {request_id!r}"
                + (f" ({exit_.describe()})" if exit_ else "")
            )
        raise WireTimeout(f"no answer to request {request_id!r} within {limit:g} s")

    async def request(
        self, method: str, params: JSON = None, *, id: JSON = None, timeout: float | None = None
    ) -> Response:
        request_id = await self.start_request(method, params, id=id)
        try:
            return await self.wait_response(request_id, timeout)
        except WireTimeout as exc:
            raise WireTimeout(f"{method}: {exc}") from None

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds (re-checked on every line); False on timeout/EOF."""
        with anyio.move_on_after(timeout):
            while not predicate():
                if self._eof:
                    return predicate()
                changed = self._changed
                await changed.wait()
            return True
        return predicate()

    async def quiet(self, period: float) -> None:
        """Let ``period`` seconds pass (what arrives meanwhile is recorded)."""
        await anyio.sleep(period)

    async def close_stdin(self) -> None:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self.process.stdin.aclose()

    async def wait_exit(self, timeout: float) -> ProcessExit | None:
        with anyio.move_on_after(timeout):
            return await self.process.wait()
        return None

    async def _exit_soon(self) -> ProcessExit | None:
        return await self.wait_exit(0.5)

    # -- the common steps ------------------------------------------------------------------

    def initialize_params(self, protocol_version: int = 1) -> dict[str, Any]:
        """``initialize`` params: the version, this client's capabilities, its name."""
        return {
            "protocolVersion": protocol_version,
            "clientCapabilities": self.client.capabilities(),
            "clientInfo": {"name": "subagents-conformance", "version": "1"},
        }

    async def initialize(
        self, protocol_version: int = 1, *, timeout: float | None = None
    ) -> Response:
        return await self.request(
            "initialize", self.initialize_params(protocol_version), timeout=timeout
        )

    def new_session_params(self, **overrides: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"cwd": str(self.cwd), "mcpServers": []}
        params.update(overrides)
        return params


@asynccontextmanager
async def open_wire(
    command: Sequence[str],
    *,
    session_dir: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    client: ClientSide | None = None,
    timeout: float = 10.0,
    close_timeout: float = 1.0,
) -> AsyncGenerator[AgentWire, None]:
    """Start ``command`` in ``cwd`` (this process's working directory when ``None``),
    inheriting this environment plus ``env``, and wrap it; ``session_dir`` (made if missing)
    is the private directory its sessions work in (:attr:`AgentWire.cwd`).

    On exit the process gets the shutdown ladder: close stdin, wait ``close_timeout`` for it
    to exit, then SIGTERM and SIGKILL its group (1 s each).
    """
    session_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - a private temp dir
    async with open_agent_process(
        command,
        env=env,
        inherit_env=True,
        cwd=cwd,
        close_timeout=0.05,  # the wait after closing stdin happens below, once
        term_timeout=1.0,
        kill_timeout=1.0,
        name="agent-under-test",
    ) as process:
        resolved = session_dir.resolve()  # noqa: ASYNC240 - a private temp dir, instant
        raised: BaseException | None = None  # re-raised as itself, not in an ExceptionGroup
        async with anyio.create_task_group() as tg:
            wire = AgentWire(process, client or ClientSide(), resolved, timeout, tg)
            tg.start_soon(wire.read_agent)
            try:
                yield wire
            except BaseException as exc:
                raised = exc
            finally:
                with anyio.CancelScope(shield=True):
                    await wire.close_stdin()
                    with anyio.move_on_after(close_timeout):
                        await process.wait()
                tg.cancel_scope.cancel()
        if raised is not None:
            raise raised
