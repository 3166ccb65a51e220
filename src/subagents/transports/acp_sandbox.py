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

import os
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Final, Self, final

from .._owned import OwnedTaskGroup
from ..protocol import acp
from ..rpc import Router
from ._sandbox_files import SandboxFiles
from ._sandbox_terminals import SandboxTerminals

if TYPE_CHECKING:
    from ..protocol.acp import ClientCapabilities

__all__ = (
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_MAX_READ_BYTES",
    "DEFAULT_MAX_TERMINALS",
    "FS_METHODS",
    "TERMINAL_METHODS",
    "ClientSandbox",
)

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
        self._read = read
        self._write = write
        self._terminals_enabled = terminals
        self._files = SandboxFiles(resolved, max_read_bytes)
        self._terminals = SandboxTerminals(
            self._files,
            max_terminals=max_terminals,
            terminal_env=terminal_env,
            inherit_env=inherit_env,
            max_output_bytes=max_output_bytes,
            term_timeout=term_timeout,
            kill_timeout=kill_timeout,
        )
        self._owned = OwnedTaskGroup("a ClientSandbox")
        self._closed = False
        # The handlers, served by the two halves.
        self.read_text_file = self._files.read_text_file
        self.write_text_file = self._files.write_text_file
        self.create_terminal = self._terminals.create_terminal
        self.terminal_output = self._terminals.terminal_output
        self.wait_for_terminal_exit = self._terminals.wait_for_terminal_exit
        self.kill_terminal = self._terminals.kill_terminal
        self.release_terminal = self._terminals.release_terminal

    # ------------------------------------------------------------------ configuration

    @property
    def root(self) -> str:
        """The root directory, resolved (absolute, no symbolic links)."""
        return self._files.root

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
        self._terminals.open(await self._owned.open(closed=self._closed))
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return await self._owned.close(exc_type, exc, traceback)

    async def aclose(self) -> None:
        """Kill and reap every terminal; no new terminal can be created afterwards.

        Shielded from cancellation and bounded by ``term_timeout + kill_timeout`` (plus a
        little), whatever the number of terminals.
        """
        self._closed = True
        await self._terminals.close()
