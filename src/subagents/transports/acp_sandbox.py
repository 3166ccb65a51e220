"""The ACP client's file system and terminals, offered to an agent and confined to one directory.

ACP lets an agent ask its client to read and write text files (``fs/read_text_file``,
``fs/write_text_file``) and to run commands (``terminal/*``). A client advertises each of these
in ``clientCapabilities`` and then must serve them. They are off unless the user opts in: a
client that does not use :class:`ClientSandbox` advertises ``fs`` and ``terminal`` as false.

:class:`ClientSandbox` serves them under a root directory::

    async with ClientSandbox(workspace, terminals=False) as sandbox:
        sandbox.register(router)  # before the peer starts answering
        capabilities = sandbox.capabilities()  # goes into the initialize request
        ...

Errors the agent gets (an :class:`~subagents.rpc.RPCError`, ``data`` always says why in
``reason``; paths and terminal ids are echoed back):

* ``-32602 Invalid params`` when a path is refused: not absolute (``not_absolute``), outside
  the root after resolving ``..`` and symbolic links (``outside_root``), a directory
  (``is_directory``), not a regular file (``not_a_regular_file``), a path through a file
  (``not_a_directory``), a symbolic link swapped in while serving (``symlink``), a read too
  large to answer (``too_large``), or content that is not valid Unicode (``invalid_content``);
  also a terminal request that cannot be honoured (``empty_command``, ``invalid_env``).
* ``-32002 Resource not found`` when the file to read (or a terminal's ``cwd``) does not exist
  (``not_found``), the command to run does not exist (``command_not_found``), or the terminal id
  is unknown or was released (``unknown_terminal``).
* ``-32603 Internal error`` for any other operating-system failure (``reason`` is its
  description), too many terminals (``too_many_terminals``), and terminals requested while the
  sandbox is not running (``not_running``).

What this is not: an operating-system sandbox. The root confines the *paths* of ``fs/*``
requests and the working directory of terminals. A command run in a terminal can do anything the
user can, and a process racing the checks (renaming a directory into a symbolic link between
the check and the open) is caught only where the system tells us where an open file really is
(Linux ``/proc``). Hard links are the same file wherever they appear and are not refused.
Commands are started directly (``command`` then ``args``), not through a shell.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import signal
import stat
import subprocess
from collections.abc import Mapping
from itertools import count
from types import TracebackType
from typing import TYPE_CHECKING, Final, Self, final

import anyio
import anyio.abc

from .._owned import open_owned_task_group
from ..protocol import acp
from ..protocol.jsonrpc import ErrorCode
from ..rpc import Router, RPCError
from .process import build_child_env, terminate_process_group

if TYPE_CHECKING:
    from ..protocol.acp import (
        ClientCapabilities,
        CreateTerminalRequest,
        CreateTerminalResponse,
        KillTerminalRequest,
        KillTerminalResponse,
        ReadTextFileRequest,
        ReadTextFileResponse,
        ReleaseTerminalRequest,
        ReleaseTerminalResponse,
        TerminalOutputRequest,
        TerminalOutputResponse,
        WaitForTerminalExitRequest,
        WaitForTerminalExitResponse,
        WriteTextFileRequest,
        WriteTextFileResponse,
    )

__all__ = (
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_MAX_READ_BYTES",
    "DEFAULT_MAX_TERMINALS",
    "FS_METHODS",
    "TERMINAL_METHODS",
    "ClientSandbox",
)

logger = logging.getLogger("subagents.sandbox")

_READ: Final = "fs/read_text_file"
_WRITE: Final = "fs/write_text_file"
_CREATE: Final = "terminal/create"
_OUTPUT: Final = "terminal/output"
_WAIT: Final = "terminal/wait_for_exit"
_KILL: Final = "terminal/kill"
_RELEASE: Final = "terminal/release"

FS_METHODS: Final = (_READ, _WRITE)
"""The ``fs/*`` methods a client serves (each gated by its own ``fs`` capability)."""
TERMINAL_METHODS: Final = (_CREATE, _OUTPUT, _WAIT, _KILL, _RELEASE)
"""The ``terminal/*`` methods a client serves (all gated by the ``terminal`` capability)."""

DEFAULT_MAX_TERMINALS: Final = 16
"""Terminals alive at once (created and not yet released) per sandbox."""
DEFAULT_MAX_OUTPUT_BYTES: Final = 1024 * 1024
"""Output kept per terminal when the agent sets no smaller ``outputByteLimit``."""
DEFAULT_MAX_READ_BYTES: Final = 8 * 1024 * 1024
"""The most content one ``fs/read_text_file`` answer carries; larger reads need line/limit."""

_DRAIN_GRACE: Final = 0.5
"""Once a command has exited, how long to wait for the rest of its output before reporting
the exit anyway (a background process of the command may hold the output pipe open)."""

_READ_PIECE: Final = 64 * 1024


# ---------------------------------------------------------------------------------- errors


def _refused(path: str, reason: str, message: str) -> RPCError:
    return RPCError(ErrorCode.INVALID_PARAMS, message, {"path": path, "reason": reason})


def _not_found(path: str) -> RPCError:
    return RPCError(
        ErrorCode.RESOURCE_NOT_FOUND,
        f"No such file or directory: {path}",
        {"path": path, "reason": "not_found"},
    )


def _os_error(path: str, exc: OSError) -> RPCError:
    """The answer for an operating-system error about ``path``."""
    if isinstance(exc, FileNotFoundError):
        return _not_found(path)
    if isinstance(exc, IsADirectoryError):
        return _refused(path, "is_directory", f"Path is a directory: {path}")
    if isinstance(exc, NotADirectoryError):
        return _refused(
            path, "not_a_directory", f"A component of the path is not a directory: {path}"
        )
    if exc.errno == errno.ELOOP:
        return _refused(path, "symlink", f"Path is a symbolic link: {path}")
    if exc.errno == errno.ENXIO:
        return _refused(path, "not_a_regular_file", f"Path is not a regular file: {path}")
    reason = exc.strerror or str(exc)
    return RPCError(
        ErrorCode.INTERNAL_ERROR,
        f"Cannot access {path}: {reason}",
        {"path": path, "reason": reason},
    )


def _unknown_terminal(terminal_id: str) -> RPCError:
    return RPCError(
        ErrorCode.RESOURCE_NOT_FOUND,
        f"Unknown terminal: {terminal_id}",
        {"terminalId": terminal_id, "reason": "unknown_terminal"},
    )


# ---------------------------------------------------------------------------------- paths


def _within(path: str, root: str) -> bool:
    return os.path.commonpath((root, path)) == root


def _opened_path(fd: int) -> str | None:
    """Where an open file really is, when the system says (Linux); else ``None``."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


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


# ---------------------------------------------------------------------------------- the sandbox


@final
class ClientSandbox:
    """Serves an agent's ``fs/*`` and ``terminal/*`` requests inside ``root``.

    Each group of methods is enabled separately (``read``, ``write``, ``terminals``);
    :meth:`capabilities` advertises exactly what is enabled and :meth:`register` installs only
    those handlers, so a disabled method is answered ``-32601 Method not found``.

    File paths must be absolute and, once ``..`` and symbolic links are resolved, inside
    ``root``. Reads honour ``line`` (1-based; 0 counts as 1) and ``limit`` (lines) and decode
    UTF-8 leniently (invalid bytes become U+FFFD); a read answers at most ``max_read_bytes``.
    Writes replace the file's content, creating the file, and any missing directories on its way
    inside the root.

    Terminals run ``command`` with ``args`` in their own process group, with stdin from
    ``/dev/null`` and stdout and stderr captured together. The environment is
    :func:`~subagents.transports.build_child_env` of ``terminal_env`` (and the parent's whole
    environment with ``inherit_env=True``), then the request's ``env`` on top. ``cwd`` defaults
    to the root and must be inside it. Each terminal keeps the last ``outputByteLimit`` bytes of
    output (at most ``max_output_bytes``), cut at a character boundary. A terminal belongs to
    the session that created it: another session's requests see it as unknown.

    Terminals need the sandbox to be running: use it as an async context manager. On exit (or
    :meth:`aclose`) every terminal is killed (its whole process group: SIGTERM, then SIGKILL
    after ``term_timeout`` seconds) and reaped. ``fs/*`` needs no running sandbox.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        read: bool = True,
        write: bool = True,
        terminals: bool = True,
        max_terminals: int = DEFAULT_MAX_TERMINALS,
        terminal_env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        term_timeout: float = 2.0,
        kill_timeout: float = 2.0,
    ) -> None:
        given: str = os.fspath(root)
        resolved = os.path.realpath(given)
        if not os.path.isdir(resolved):
            raise NotADirectoryError(f"sandbox root is not a directory: {given!r}")
        if max_terminals < 0 or max_output_bytes < 0 or max_read_bytes < 0:
            raise ValueError("limits must not be negative")
        self._root = resolved
        self._read = read
        self._write = write
        self._terminals_enabled = terminals
        self._max_terminals = max_terminals
        self._terminal_env = dict(terminal_env) if terminal_env is not None else None
        self._inherit_env = inherit_env
        self._max_output_bytes = max_output_bytes
        self._max_read_bytes = max_read_bytes
        self._term_timeout = term_timeout
        self._kill_timeout = kill_timeout
        self._terminals: dict[str, _Terminal] = {}
        self._starting = 0
        self._ids = count(1)
        self._task_group: anyio.abc.TaskGroup | None = None
        self._closed = False

    # ------------------------------------------------------------------ configuration

    @property
    def root(self) -> str:
        """The root directory, resolved (absolute, no symbolic links)."""
        return self._root

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods this sandbox serves, as configured."""
        enabled: list[str] = []
        if self._read:
            enabled.append(_READ)
        if self._write:
            enabled.append(_WRITE)
        if self._terminals_enabled:
            enabled.extend(TERMINAL_METHODS)
        return tuple(enabled)

    def capabilities(self) -> ClientCapabilities:
        """The client capabilities to advertise: ``fs`` and ``terminal`` as enabled here."""
        return acp.ClientCapabilities(
            fs=acp.FileSystemCapabilities(read_text_file=self._read, write_text_file=self._write),
            terminal=self._terminals_enabled,
        )

    def register(self, router: Router) -> None:
        """Install the handlers of the enabled methods (and only those) on ``router``."""
        if self._read:
            router.on_request(_READ, self.read_text_file, params=acp.ReadTextFileRequest)
        if self._write:
            router.on_request(_WRITE, self.write_text_file, params=acp.WriteTextFileRequest)
        if self._terminals_enabled:
            router.on_request(_CREATE, self.create_terminal, params=acp.CreateTerminalRequest)
            router.on_request(_OUTPUT, self.terminal_output, params=acp.TerminalOutputRequest)
            router.on_request(
                _WAIT, self.wait_for_terminal_exit, params=acp.WaitForTerminalExitRequest
            )
            router.on_request(_KILL, self.kill_terminal, params=acp.KillTerminalRequest)
            router.on_request(_RELEASE, self.release_terminal, params=acp.ReleaseTerminalRequest)

    # ------------------------------------------------------------------ lifetime

    async def __aenter__(self) -> Self:
        self._task_group = await open_owned_task_group(
            self._task_group, closed=self._closed, what="a ClientSandbox"
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        task_group, self._task_group = self._task_group, None
        assert task_group is not None
        return await task_group.__aexit__(exc_type, exc, traceback)

    async def aclose(self) -> None:
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

    # ------------------------------------------------------------------ fs

    def _resolve(self, path: str) -> str:
        """``path`` with ``..`` and symbolic links resolved, if it is allowed; else refuse."""
        if "\x00" in path:
            raise _refused(path, "invalid_path", "Path contains a NUL character")
        if not os.path.isabs(path):
            raise _refused(path, "not_absolute", f"Path must be absolute: {path}")
        resolved = os.path.realpath(path)
        if not _within(resolved, self._root):
            raise _refused(
                path, "outside_root", f"Path is outside the sandbox root {self._root}: {path}"
            )
        return resolved

    def _check_opened(self, fd: int, path: str) -> None:
        actual = _opened_path(fd)
        if actual is not None and actual.startswith("/") and not _within(actual, self._root):
            raise _refused(
                path, "outside_root", f"Path is outside the sandbox root {self._root}: {path}"
            )

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        """Serve ``fs/read_text_file``."""
        resolved = self._resolve(request.path)
        content = await anyio.to_thread.run_sync(
            self._read_sync, request.path, resolved, request.line, request.limit
        )
        return acp.ReadTextFileResponse(content=content)

    def _read_sync(self, path: str, resolved: str, line: int | None, limit: int | None) -> str:
        fd = self._open(path, resolved, os.O_RDONLY)
        with os.fdopen(fd, "rb") as file:
            try:
                data = self._read_lines(file, path, line, limit)
            except OSError as exc:
                raise _os_error(path, exc) from exc
        return data.decode("utf-8", "replace")

    def _open(self, path: str, resolved: str, flags: int) -> int:
        """Open a regular file inside the root (never through a final symbolic link, never
        blocking on a FIFO); refuse anything else."""
        flags |= os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(resolved, flags, 0o666)
        except OSError as exc:
            raise _os_error(path, exc) from exc
        try:
            self._check_opened(fd, path)
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise _refused(path, "is_directory", f"Path is a directory: {path}")
            if not stat.S_ISREG(mode):
                raise _refused(path, "not_a_regular_file", f"Path is not a regular file: {path}")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _read_lines(
        self, file: io.BufferedReader, path: str, line: int | None, limit: int | None
    ) -> bytes:
        budget = self._max_read_bytes
        too_large = _refused(
            path,
            "too_large",
            f"File content is over {budget} bytes: read it in parts with line and limit",
        )
        if line is None and limit is None:
            data = file.read(budget + 1)
            if len(data) > budget:
                raise too_large
            return data
        first = max(line or 1, 1)
        out = bytearray()
        current = 1
        taken = 0
        while limit is None or taken < limit:
            piece = file.readline(_READ_PIECE)
            if not piece:
                break
            if current >= first:
                out += piece
                if len(out) > budget:
                    raise too_large
            if piece.endswith(b"\n"):
                if current >= first:
                    taken += 1
                current += 1
        return bytes(out)

    async def write_text_file(self, request: WriteTextFileRequest) -> WriteTextFileResponse:
        """Serve ``fs/write_text_file``: create or replace the file (and missing directories)."""
        resolved = self._resolve(request.path)
        if resolved == self._root:
            raise _refused(request.path, "is_directory", f"Path is a directory: {request.path}")
        try:
            data = request.content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _refused(
                request.path, "invalid_content", "Content is not valid Unicode text"
            ) from exc
        await anyio.to_thread.run_sync(self._write_sync, request.path, resolved, data)
        return acp.WriteTextFileResponse()

    def _write_sync(self, path: str, resolved: str, data: bytes) -> None:
        # ``resolved`` is strictly inside the root, so its parent is the root or inside it.
        try:
            os.makedirs(os.path.dirname(resolved), exist_ok=True)
        except OSError as exc:
            raise _os_error(path, exc) from exc
        # Not O_TRUNC: the file is emptied only once it is known to be a regular file inside.
        fd = self._open(path, resolved, os.O_WRONLY | os.O_CREAT)
        with os.fdopen(fd, "wb") as file:
            try:
                os.ftruncate(fd, 0)
                file.write(data)
                file.flush()
            except OSError as exc:
                raise _os_error(path, exc) from exc

    # ------------------------------------------------------------------ terminals

    def _terminal(self, session_id: str, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None or terminal.session_id != session_id:
            raise _unknown_terminal(terminal_id)
        return terminal

    def _cwd(self, cwd: str | None) -> str:
        if cwd is None:
            return self._root
        resolved = self._resolve(cwd)
        if not os.path.exists(resolved):
            raise _not_found(cwd)
        if not os.path.isdir(resolved):
            raise _refused(cwd, "not_a_directory", f"Working directory is not a directory: {cwd}")
        return resolved

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
        cwd = self._cwd(request.cwd)
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
