"""The file system half of :class:`~subagents.transports.acp_sandbox.ClientSandbox`: paths
confined to a root, and the ``fs/read_text_file`` / ``fs/write_text_file`` answers."""

from __future__ import annotations

import errno
import io
import os
import stat
from typing import TYPE_CHECKING, Final, final

import anyio

from ..protocol import acp
from ..protocol.jsonrpc import ErrorCode
from ..rpc import RPCError

if TYPE_CHECKING:
    from ..protocol.acp import (
        ReadTextFileRequest,
        ReadTextFileResponse,
        WriteTextFileRequest,
        WriteTextFileResponse,
    )

__all__ = ("SandboxFiles", "refused")

_READ_PIECE: Final = 64 * 1024


def refused(path: str, reason: str, message: str) -> RPCError:
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
        return refused(path, "is_directory", f"Path is a directory: {path}")
    if isinstance(exc, NotADirectoryError):
        return refused(
            path, "not_a_directory", f"A component of the path is not a directory: {path}"
        )
    if exc.errno == errno.ELOOP:
        return refused(path, "symlink", f"Path is a symbolic link: {path}")
    if exc.errno == errno.ENXIO:
        return refused(path, "not_a_regular_file", f"Path is not a regular file: {path}")
    reason = exc.strerror or str(exc)
    return RPCError(
        ErrorCode.INTERNAL_ERROR,
        f"Cannot access {path}: {reason}",
        {"path": path, "reason": reason},
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


@final
class SandboxFiles:
    """Reads and writes regular files inside ``root`` (already resolved); refuses the rest."""

    __slots__ = ("_max_read_bytes", "root")

    def __init__(self, root: str, max_read_bytes: int) -> None:
        self.root = root
        self._max_read_bytes = max_read_bytes

    def resolve(self, path: str) -> str:
        """``path`` with ``..`` and symbolic links resolved, if it is allowed; else refuse."""
        if "\x00" in path:
            raise refused(path, "invalid_path", "Path contains a NUL character")
        if not os.path.isabs(path):
            raise refused(path, "not_absolute", f"Path must be absolute: {path}")
        resolved = os.path.realpath(path)
        if not _within(resolved, self.root):
            raise refused(
                path, "outside_root", f"Path is outside the sandbox root {self.root}: {path}"
            )
        return resolved

    def _check_opened(self, fd: int, path: str) -> None:
        actual = _opened_path(fd)
        if actual is not None and actual.startswith("/") and not _within(actual, self.root):
            raise refused(
                path, "outside_root", f"Path is outside the sandbox root {self.root}: {path}"
            )

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        """Serve ``fs/read_text_file``."""
        resolved = self.resolve(request.path)
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
                raise refused(path, "is_directory", f"Path is a directory: {path}")
            if not stat.S_ISREG(mode):
                raise refused(path, "not_a_regular_file", f"Path is not a regular file: {path}")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _read_lines(
        self, file: io.BufferedReader, path: str, line: int | None, limit: int | None
    ) -> bytes:
        budget = self._max_read_bytes
        too_large = refused(
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
        resolved = self.resolve(request.path)
        if resolved == self.root:
            raise refused(request.path, "is_directory", f"Path is a directory: {request.path}")
        try:
            data = request.content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise refused(
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

    def working_directory(self, cwd: str | None) -> str:
        """A terminal's working directory: the root, or ``cwd`` if it is a directory inside."""
        if cwd is None:
            return self.root
        resolved = self.resolve(cwd)
        if not os.path.exists(resolved):
            raise _not_found(cwd)
        if not os.path.isdir(resolved):
            raise refused(cwd, "not_a_directory", f"Working directory is not a directory: {cwd}")
        return resolved
