"""A scripted stand-in for the ``claude`` CLI in stream-json mode.

Run as a program it is the CLI, a real child process (argv, environment, stderr, exit status,
signals); :class:`FakeClaude` runs the same script in-process over a byte-stream pair, for the
tests that need only the protocol. It speaks the shapes recorded on the real CLI 2.1.332
(research note claude.md §2.5, §2.6, §4): the ``initialize`` control request, user lines,
``system/init``, ``stream_event`` deltas, ``assistant``/``user`` lines, ``result``, and the
control requests it sends (``can_use_tool``, ``hook_callback``, ``control_cancel_request``).
What a turn does is picked by a marker in the prompt:

- (none): three text deltas, the assistant message and a ``success`` result, text ``REPLY``;
- ``[[stall]]``: one delta, then waits for ``interrupt``; then an aborted assistant message,
  ``[Request interrupted by user]`` and an ``error_during_execution`` result;
- ``[[tool]]``: a Bash ``tool_use`` and a ``can_use_tool`` request; the result text says
  what the host answered (``TOOL_RESULT_SEEN: fake-tool-ran`` or ``TOOL_DENIED: <message>``);
- ``[[tool-cancel]]``: a ``can_use_tool`` request, then ``control_cancel_request`` for it;
- ``[[hook]]``: a ``hook_callback`` for ``hook_0``; the result text is the answer's JSON;
- ``[[control:NAME]]``: a control request of subtype NAME; the result text is the answer;
- ``[[error]]``: a synthetic API-error assistant message and an ``is_error`` result (then
  exit 1 on stdin EOF, as the real CLI);
- ``[[big:N]]``: an assistant message and result whose text is N ``x``;
- ``[[noise]]``: a non-JSON stdout line, an unknown message type and an unknown system
  subtype, then a normal turn;
- ``[[crash]]``: one delta, then "fake crash" on stderr and exit 2 (in-process: stdout ends).

As a program: ``FAKE_CLAUDE_RECORD`` (a file: the argv and environment, then every stdin
message, one JSON per line), ``FAKE_CLAUDE_MODE`` (``exit-before-init``: stderr and exit 3;
``ignore-eof``: stays alive after stdin EOF until signalled). A non-JSON stdin line is fatal,
as on the real CLI (stderr and exit 1). In-process, :attr:`FakeClaude.received` holds every
stdin message.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

REPLY = "FAKE-REPLY: pong"


class FakeClaude:
    """The scripted CLI. ``write`` sends one stdout line; ``crash`` ends the CLI (a process
    exits with the status; in-process, stdout ends)."""

    def __init__(
        self,
        write: Callable[[str], Awaitable[None]] | None = None,
        crash: Callable[[str, int], Awaitable[None]] | None = None,
        on_received: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.received: list[dict[str, Any]] = []
        """Every stdin message, in order."""
        self.session = str(uuid.uuid4())
        self._write = write
        self._crash = crash
        self._on_received = on_received
        self._responses: dict[str, dict[str, Any]] = {}
        self._response_arrived = anyio.Event()
        self._interrupted = anyio.Event()
        self.last_error = False

    # -- in-process

    async def serve(
        self, stdin: anyio.abc.ByteReceiveStream, stdout: anyio.abc.ByteSendStream
    ) -> None:
        """Run over a byte-stream pair until stdin ends (or ``[[crash]]``); closes stdout."""

        async def write(line: str) -> None:
            await stdout.send(line.encode() + b"\n")

        with anyio.CancelScope() as scope:

            async def crash(stderr: str, status: int) -> None:
                scope.cancel()  # the CLI is gone: its stdout ends below

            self._write = write
            self._crash = crash
            try:
                await self.run(_lines_of(stdin))
            finally:
                with anyio.CancelScope(shield=True):
                    await stdout.aclose()

    # -- the script

    async def emit(self, message: dict[str, Any]) -> None:
        assert self._write is not None
        await self._write(json.dumps(message, separators=(",", ":")))

    async def run(self, lines: AsyncIterator[bytes]) -> None:
        """Read stdin lines until EOF, answering control requests and running turns (one at
        a time; a turn runs while stdin is read on); then wait for the running turn."""
        turn_done: anyio.Event | None = None
        async with anyio.create_task_group() as tg:
            async for raw in lines:
                line = raw.decode("utf-8", "replace").strip()
                if not line:
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    assert self._crash is not None
                    await self._crash(
                        f"Error parsing streaming input line (type=unknown, {len(line)} chars)\n",
                        1,
                    )
                    return
                self.received.append(message)
                if self._on_received is not None:
                    self._on_received(message)
                kind = message.get("type")
                if kind == "control_request":
                    await self._on_control_request(message)
                elif kind == "control_response":
                    response = message.get("response", {})
                    self._responses[response.get("request_id")] = response
                    self._response_arrived.set()
                    self._response_arrived = anyio.Event()
                elif kind == "user":
                    if turn_done is not None:
                        await turn_done.wait()
                    content = message.get("message", {}).get("content")
                    prompt = content if isinstance(content, str) else json.dumps(content)
                    turn_done = anyio.Event()
                    tg.start_soon(self._turn, prompt, turn_done)
            # stdin EOF does not cancel: the running turn finishes first (as on the real CLI).

    async def _on_control_request(self, message: dict[str, Any]) -> None:
        request = message.get("request", {})
        subtype = request.get("subtype")
        request_id = message.get("request_id")
        if subtype == "initialize":
            body: dict[str, Any] = {
                "commands": [],
                "pid": os.getpid(),
                "claude_code_version": "2.1.332-fake",
                "session_state": "idle",
            }
        elif subtype == "interrupt":
            self._interrupted.set()
            body = {"still_queued": []}
        else:
            error = {
                "subtype": "error",
                "request_id": request_id,
                "error": f"Unsupported control request subtype: {subtype}",
                "error_code": "unsupported_request",
            }
            await self.emit({"type": "control_response", "response": error})
            return
        answer = {"subtype": "success", "request_id": request_id, "response": body}
        await self.emit({"type": "control_response", "response": answer})

    async def ask(self, request: dict[str, Any], *, cancel: bool = False) -> dict[str, Any] | None:
        """Send a control request to the host; its response (``None`` when cancelled)."""
        request_id = str(uuid.uuid4())
        await self.emit({"type": "control_request", "request_id": request_id, "request": request})
        if cancel:
            await anyio.sleep(0.2)
            await self.emit({"type": "control_cancel_request", "request_id": request_id})
            await anyio.sleep(0.3)  # an answer arriving now would be recorded
            return None
        with anyio.move_on_after(20):
            while request_id not in self._responses:
                await self._response_arrived.wait()
        return self._responses.pop(request_id, None)

    def delta(self, text: str) -> dict[str, Any]:
        return {
            "type": "stream_event",
            "event": {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
            "session_id": self.session,
            "parent_tool_use_id": None,
        }

    def assistant(self, content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "type": "assistant",
            "message": {"role": "assistant", "model": "fake", "content": content},
            "parent_tool_use_id": None,
            "session_id": self.session,
            **extra,
        }

    def user(self, content: Any) -> dict[str, Any]:
        return {
            "type": "user",
            "message": {"role": "user", "content": content},
            "parent_tool_use_id": None,
            "session_id": self.session,
        }

    async def result(
        self, text: str | None, subtype: str = "success", is_error: bool = False, **extra: Any
    ) -> None:
        self.last_error = is_error
        await self.emit(
            {
                "type": "result",
                "subtype": subtype,
                "is_error": is_error,
                "result": text,
                "num_turns": 1,
                "duration_ms": 5,
                "session_id": self.session,
                "total_cost_usd": 0.000144,
                "usage": {"input_tokens": 11, "output_tokens": 5},
                "stop_reason": None if is_error else "end_turn",
                "terminal_reason": extra.pop("terminal_reason", "completed"),
                **extra,
            }
        )

    async def _turn(self, prompt: str, done: anyio.Event) -> None:
        try:
            await self.run_turn(prompt)
        finally:
            done.set()

    async def run_turn(self, prompt: str) -> None:
        self._interrupted = anyio.Event()
        await self.emit(
            {
                "type": "system",
                "subtype": "init",
                "session_id": self.session,
                "cwd": os.getcwd(),
                "model": "claude-fake-model",
                "tools": ["Bash", "Read"],
                "permissionMode": "default",
                "claude_code_version": "2.1.332-fake",
            }
        )
        if "[[noise]]" in prompt:
            assert self._write is not None
            await self._write("[debug] this line is not JSON")
            await self.emit({"type": "mystery_event", "payload": 1, "session_id": self.session})
            await self.emit({"type": "system", "subtype": "brand_new", "session_id": self.session})
        if "[[crash]]" in prompt:
            await self.emit(self.delta("FAKE-R"))
            assert self._crash is not None
            await self._crash("fake crash\n", 2)
            return
        if "[[stall]]" in prompt:
            await self.emit(self.delta("FAKE-R"))
            with anyio.move_on_after(30):
                await self._interrupted.wait()
            await self.emit(self.assistant([{"type": "text", "text": "FAKE-R"}], aborted=True))
            await self.emit(self.user([{"type": "text", "text": "[Request interrupted by user]"}]))
            await self.result(
                None,
                "error_during_execution",
                True,
                terminal_reason="aborted_streaming",
                errors=["interrupted"],
            )
            return
        if "[[tool]]" in prompt or "[[tool-cancel]]" in prompt:
            await self._tool(cancel="[[tool-cancel]]" in prompt)
            return
        if "[[hook]]" in prompt:
            answer = await self.ask(
                {
                    "subtype": "hook_callback",
                    "callback_id": "hook_0",
                    "input": {"hook_event_name": "PreToolUse", "tool_name": "Bash"},
                    "tool_use_id": "toolu_fake_2",
                }
            )
            await self.result(json.dumps(answer, sort_keys=True))
            return
        match = re.search(r"\[\[control:(\w+)\]\]", prompt)
        if match:
            answer = await self.ask({"subtype": match.group(1)})
            await self.result(json.dumps(answer, sort_keys=True))
            return
        if "[[error]]" in prompt:
            text = "API Error: 529 Overloaded (fake)"
            await self.emit(
                self.assistant(
                    [{"type": "text", "text": text}],
                    error="server_error",
                    is_api_error_message=True,
                    api_error_status=529,
                )
            )
            await self.result(
                text, "success", True, terminal_reason="api_error", api_error_status=529
            )
            return
        match = re.search(r"\[\[big:(\d+)\]\]", prompt)
        if match:
            text = "x" * int(match.group(1))
            await self.emit(self.assistant([{"type": "text", "text": text}]))
            await self.result(text)
            return
        for piece in ("FAKE-", "REPLY: ", "pong"):
            await self.emit(self.delta(piece))
        await self.emit(self.assistant([{"type": "text", "text": REPLY}]))
        await self.result(REPLY)

    async def _tool(self, *, cancel: bool) -> None:
        tool_input = {"command": "touch fake_marker.txt", "description": "Touch a marker"}
        await self.emit(
            self.assistant(
                [{"type": "tool_use", "id": "toolu_fake_1", "name": "Bash", "input": tool_input}]
            )
        )
        request = {
            "subtype": "can_use_tool",
            "tool_name": "Bash",
            "display_name": "Bash",
            "input": tool_input,
            "description": "Touch a marker",
            "permission_suggestions": [],
            "tool_use_id": "toolu_fake_1",
        }
        if cancel:
            await self.ask(request, cancel=True)
            await self.result("CANCEL_SENT")
            return
        answer = await self.ask(request) or {}
        body = answer.get("response") or {}
        if answer.get("subtype") == "success" and body.get("behavior") == "allow":
            ran = f"fake-tool-ran {json.dumps(body.get('updatedInput'))}"
            await self.emit(
                self.user([{"type": "tool_result", "tool_use_id": "toolu_fake_1", "content": ran}])
            )
            text = f"TOOL_RESULT_SEEN: {ran}"
        else:
            message = body.get("message", "no answer")
            denied = {
                "type": "tool_result",
                "tool_use_id": "toolu_fake_1",
                "content": message,
                "is_error": True,
            }
            await self.emit(self.user([denied]))
            text = f"TOOL_DENIED: {message}"
        await self.emit(self.assistant([{"type": "text", "text": text}]))
        await self.result(text)


async def _lines_of(stream: anyio.abc.ByteReceiveStream) -> AsyncIterator[bytes]:
    buffer = b""
    while True:
        try:
            buffer += await stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            break
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line
    if buffer:
        yield buffer


# ---------------------------------------------------------------- as a program


def record(entry: Any) -> None:
    path = os.environ.get("FAKE_CLAUDE_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


async def _serve_stdio() -> int:
    """The script over this process's stdin and stdout; the exit status."""

    async def write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    async def crash(stderr: str, status: int) -> None:
        sys.stderr.write(stderr)
        sys.stderr.flush()
        os._exit(status)

    fake = FakeClaude(write, crash, record)
    await fake.run(aiter(anyio.wrap_file(sys.stdin.buffer)))
    return 1 if fake.last_error else 0


def main() -> None:
    record({"argv": sys.argv[1:], "env": dict(os.environ)})
    mode = os.environ.get("FAKE_CLAUDE_MODE", "")
    if mode == "exit-before-init":
        sys.stderr.write("fake claude: cannot start (invalid API key)\n")
        sys.stderr.flush()
        sys.exit(3)
    status = anyio.run(_serve_stdio)
    record({"eof": True})
    if mode == "ignore-eof":
        signal.signal(signal.SIGTERM, lambda *_: (record({"sigterm": True}), os._exit(143)))
        while True:
            signal.pause()
    sys.exit(status)


if __name__ == "__main__":
    main()
