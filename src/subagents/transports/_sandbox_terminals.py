"""The terminal half of :class:`~subagents.transports.acp_sandbox.ClientSandbox`: commands
started by ``terminal/create``, their output kept within a limit, and the other
``terminal/*`` answers."""

from __future__ import annotations

import logging
import signal
import subprocess
from collections.abc import Mapping
from itertools import count
from typing import TYPE_CHECKING, Final, final

import anyio
import anyio.abc

from ..protocol import acp
from ..protocol.jsonrpc import ErrorCode
from ..rpc import RPCError
from ._sandbox_files import SandboxFiles
from .process import build_child_env, terminate_process_group

if TYPE_CHECKING:
    from ..protocol.acp import (
        CreateTerminalRequest,
        CreateTerminalResponse,
        KillTerminalRequest,
        KillTerminalResponse,
        ReleaseTerminalRequest,
        ReleaseTerminalResponse,
        TerminalOutputRequest,
        TerminalOutputResponse,
        WaitForTerminalExitRequest,
        WaitForTerminalExitResponse,
    )

__all__ = ("SandboxTerminals",)

logger = logging.getLogger("subagents.sandbox")

_DRAIN_GRACE: Final = 0.5
"""Once a command has exited, how long to wait for the rest of its output before reporting
the exit anyway (a background process of the command may hold the output pipe open)."""


def _unknown_terminal(terminal_id: str) -> RPCError:
    return RPCError(
        ErrorCode.RESOURCE_NOT_FOUND,
        f"Unknown terminal: {terminal_id}",
        {"terminalId": terminal_id, "reason": "unknown_terminal"},
    )


# ---------------------------------------------------------------------------------- output


def _sequence_length(lead: int) -> int:
    """How many bytes the UTF-8 sequence starting with ``lead`` has (1 for invalid leads)."""
    if lead >= 0xF0 and lead < 0xF8:
        return 4
    if lead >= 0xE0 and lead < 0xF0:
        return 3
    if lead >= 0xC0 and lead < 0xE0:
        return 2
    return 1


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _complete_end(data: bytes | bytearray) -> int:
    """The end of ``data`` without a trailing, incomplete UTF-8 sequence (still being written)."""
    size = len(data)
    for back in range(1, min(4, size) + 1):
        byte = data[size - back]
        if not _is_continuation(byte):
            return size - back if back < _sequence_length(byte) else size
    return size  # no lead byte nearby: not UTF-8, leave it to the decoder's replacement


def _start_at_character(data: bytes | bytearray) -> int:
    """How many leading bytes are the tail of a character cut in two (at most 3)."""
    skip = 0
    while skip < min(3, len(data)) and _is_continuation(data[skip]):
        skip += 1
    return skip


def _keep_tail(text: str, limit: int) -> str:
    """The longest end of ``text`` whose UTF-8 form fits in ``limit`` bytes."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    tail = encoded[len(encoded) - limit :]
    return tail[_start_at_character(tail) :].decode("utf-8")


@final
class _Output:
    """A terminal's combined stdout and stderr: the last ``limit`` bytes, cut between characters."""

    __slots__ = ("_buffer", "_limit", "truncated")

    def __init__(self, limit: int) -> None:
        self._buffer = bytearray()
        self._limit = limit
        self.truncated = False

    def feed(self, data: bytes) -> None:
        self._buffer += data
        excess = len(self._buffer) - self._limit
        if excess > 0:
            self.truncated = True
            del self._buffer[:excess]
            del self._buffer[: _start_at_character(self._buffer)]

    def text(self, *, complete: bool) -> str:
        """The output as text; while more may come, a character still being written is held
        back. Bytes that are not UTF-8 become U+FFFD, and the result never exceeds the limit."""
        end = len(self._buffer) if complete else _complete_end(self._buffer)
        text = bytes(self._buffer[:end]).decode("utf-8", "replace")
        kept = _keep_tail(text, self._limit)
        if len(kept) != len(text):
            self.truncated = True
        return kept


# ---------------------------------------------------------------------------------- terminals


@final
class _Terminal:
    """One command started by ``terminal/create``; owned by its watcher task."""

    __slots__ = (
        "argv",
        "exited",
        "finished",
        "output",
        "output_done",
        "process",
        "returncode",
        "scope",
        "session_id",
        "terminal_id",
    )

    def __init__(
        self,
        terminal_id: str,
        session_id: str,
        process: anyio.abc.Process,
        argv: list[str],
        limit: int,
    ) -> None:
        self.terminal_id = terminal_id
        self.session_id = session_id
        self.process = process
        self.argv = argv
        self.output = _Output(limit)
        self.output_done = anyio.Event()
        """The output pipe reached its end (or the terminal was torn down)."""
        self.exited = anyio.Event()
        """The command exited (``returncode`` is set) and its output has been read."""
        self.returncode: int | None = None
        self.scope = anyio.CancelScope()
        """Cancelled to stop the watcher (release, close)."""
        self.finished = anyio.Event()
        """The watcher is done: the process was reaped and its pipe closed."""


def _exit_status(returncode: int | None) -> dict[str, int | str]:
    """The wire fields of an exit status: ``exitCode`` for an exit, ``signal`` (its name, as
    ``"SIGKILL"``) for a kill; the other is left out rather than sent as null."""
    if returncode is None:
        return {}
    if returncode >= 0:
        return {"exitCode": returncode}
    try:
        return {"signal": signal.Signals(-returncode).name}
    except ValueError:
        return {"signal": str(-returncode)}


@final
class SandboxTerminals:
    """The terminals of one sandbox; started in the task group given to :meth:`open`."""

    def __init__(
        self,
        files: SandboxFiles,
        *,
        max_terminals: int,
        terminal_env: Mapping[str, str] | None,
        inherit_env: bool,
        max_output_bytes: int,
        term_timeout: float,
        kill_timeout: float,
    ) -> None:
        self._files = files
        self._max_terminals = max_terminals
        self._terminal_env = dict(terminal_env) if terminal_env is not None else None
        self._inherit_env = inherit_env
        self._max_output_bytes = max_output_bytes
        self._term_timeout = term_timeout
        self._kill_timeout = kill_timeout
        self._terminals: dict[str, _Terminal] = {}
        self._starting = 0
        self._ids = count(1)
        self._task_group: anyio.abc.TaskGroup | None = None
        self._closed = False

    def open(self, task_group: anyio.abc.TaskGroup) -> None:
        """Start terminals in ``task_group`` from now on (until :meth:`close`)."""
        self._task_group = task_group

    async def close(self) -> None:
        """Kill and reap every terminal; no new terminal can be created afterwards.

        Shielded from cancellation and bounded by ``term_timeout + kill_timeout`` (plus a
        little), whatever the number of terminals.
        """
        self._closed = True
        terminals = list(self._terminals.values())
        self._terminals.clear()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for terminal in terminals:
                    tg.start_soon(self._dispose, terminal)

    def _terminal(self, session_id: str, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None or terminal.session_id != session_id:
            raise _unknown_terminal(terminal_id)
        return terminal

    async def create_terminal(self, request: CreateTerminalRequest) -> CreateTerminalResponse:
        """Serve ``terminal/create``: start the command and answer with its id at once."""
        task_group = self._task_group
        if task_group is None or self._closed:
            raise RPCError(
                ErrorCode.INTERNAL_ERROR,
                "Terminals are unavailable: the client's sandbox is not running",
                {"reason": "not_running"},
            )
        if not request.command:
            raise RPCError(
                ErrorCode.INVALID_PARAMS, "Command is empty", {"reason": "empty_command"}
            )
        if len(self._terminals) + self._starting >= self._max_terminals:
            raise RPCError(
                ErrorCode.INTERNAL_ERROR,
                f"Too many terminals ({self._max_terminals}): release one first",
                {"reason": "too_many_terminals", "limit": self._max_terminals},
            )
        cwd = self._files.working_directory(request.cwd)
        env = build_child_env(self._terminal_env, inherit_env=self._inherit_env)
        for variable in request.env or ():
            if (
                not variable.name
                or "=" in variable.name
                or "\x00" in variable.name + variable.value
            ):
                raise RPCError(
                    ErrorCode.INVALID_PARAMS,
                    f"Invalid environment variable: {variable.name!r}",
                    {"name": variable.name, "reason": "invalid_env"},
                )
            env[variable.name] = variable.value
        argv = [request.command, *(request.args or ())]
        limit = self._max_output_bytes
        if request.output_byte_limit is not None:
            limit = min(limit, request.output_byte_limit)

        self._starting += 1
        process: anyio.abc.Process | None = None
        try:
            # Shielded: a process started must be registered (and so owned) even if the
            # request is cancelled meanwhile. Starting takes a fork and an exec.
            with anyio.CancelScope(shield=True):
                process = await self._start(argv, cwd, env)
        finally:
            self._starting -= 1
        assert process is not None
        terminal_id = f"terminal-{next(self._ids)}"
        terminal = _Terminal(terminal_id, request.session_id, process, argv, limit)
        if self._closed:  # closed while starting
            with anyio.CancelScope(shield=True):
                await terminate_process_group(
                    process, term_timeout=self._term_timeout, kill_timeout=self._kill_timeout
                )
                await process.aclose()
            raise RPCError(
                ErrorCode.INTERNAL_ERROR,
                "Terminals are unavailable: the client's sandbox is not running",
                {"reason": "not_running"},
            )
        self._terminals[terminal_id] = terminal
        task_group.start_soon(self._watch, terminal, name=f"sandbox {terminal_id}")
        logger.debug("%s: started %r (pid %d) in %s", terminal_id, argv, process.pid, cwd)
        return acp.CreateTerminalResponse(terminal_id=terminal_id)

    async def _start(self, argv: list[str], cwd: str, env: dict[str, str]) -> anyio.abc.Process:
        try:
            return await anyio.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise RPCError(
                ErrorCode.RESOURCE_NOT_FOUND,
                f"Command not found: {argv[0]}",
                {"command": argv[0], "reason": "command_not_found"},
            ) from exc
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise RPCError(
                ErrorCode.INTERNAL_ERROR,
                f"Cannot start {argv[0]}: {reason}",
                {"command": argv[0], "reason": reason},
            ) from exc

    async def _watch(self, terminal: _Terminal) -> None:
        """Read the output, note the exit; on teardown, reap the process and close its pipe."""
        process = terminal.process
        try:
            with terminal.scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._pump, terminal)
                    terminal.returncode = await process.wait()
                    with anyio.move_on_after(_DRAIN_GRACE):
                        await terminal.output_done.wait()
                    terminal.exited.set()
        except Exception:
            logger.exception("%s: watching %r failed", terminal.terminal_id, terminal.argv)
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:  # torn down some other way: never leak it
                    await terminate_process_group(
                        process, term_timeout=self._term_timeout, kill_timeout=self._kill_timeout
                    )
                with anyio.move_on_after(self._kill_timeout):
                    await process.aclose()
            if terminal.returncode is None:
                terminal.returncode = process.returncode
            terminal.output_done.set()
            terminal.exited.set()
            terminal.finished.set()

    async def _pump(self, terminal: _Terminal) -> None:
        stream = terminal.process.stdout
        assert stream is not None
        try:
            async for chunk in stream:
                terminal.output.feed(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            terminal.output_done.set()

    async def _kill(self, terminal: _Terminal) -> None:
        if terminal.finished.is_set():
            # The command exited, was reaped, and nothing holds its output any more: there is
            # nothing to kill, and its process-group id may since belong to someone else.
            return
        await terminate_process_group(
            terminal.process, term_timeout=self._term_timeout, kill_timeout=self._kill_timeout
        )

    async def _dispose(self, terminal: _Terminal) -> None:
        """Kill the terminal's process group, stop its watcher and wait until it is reaped."""
        with anyio.CancelScope(shield=True):
            await self._kill(terminal)
            terminal.scope.cancel()
            with anyio.move_on_after(self._kill_timeout + _DRAIN_GRACE):
                await terminal.finished.wait()

    async def terminal_output(self, request: TerminalOutputRequest) -> TerminalOutputResponse:
        """Serve ``terminal/output``: output so far, whether it was cut, and the exit status."""
        terminal = self._terminal(request.session_id, request.terminal_id)
        output = terminal.output.text(complete=terminal.output_done.is_set())
        truncated = terminal.output.truncated
        if not terminal.exited.is_set():
            return acp.TerminalOutputResponse(output=output, truncated=truncated)
        status = acp.TerminalExitStatus.model_validate(_exit_status(terminal.returncode))
        return acp.TerminalOutputResponse(output=output, truncated=truncated, exit_status=status)

    async def wait_for_terminal_exit(
        self, request: WaitForTerminalExitRequest
    ) -> WaitForTerminalExitResponse:
        """Serve ``terminal/wait_for_exit``: wait until the command exits (or the request is
        cancelled), then answer with its exit code or signal."""
        terminal = self._terminal(request.session_id, request.terminal_id)
        await terminal.exited.wait()
        return acp.WaitForTerminalExitResponse.model_validate(_exit_status(terminal.returncode))

    async def kill_terminal(self, request: KillTerminalRequest) -> KillTerminalResponse:
        """Serve ``terminal/kill``: kill the process group; the terminal stays readable."""
        terminal = self._terminal(request.session_id, request.terminal_id)
        await self._kill(terminal)
        with anyio.move_on_after(_DRAIN_GRACE + 0.5):
            await terminal.exited.wait()
        return acp.KillTerminalResponse()

    async def release_terminal(self, request: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        """Serve ``terminal/release``: kill if running, reap, and forget the id."""
        terminal = self._terminal(request.session_id, request.terminal_id)
        del self._terminals[terminal.terminal_id]
        await self._dispose(terminal)
        return acp.ReleaseTerminalResponse()
