"""Who a remote client is (its bearer token names a principal) and what it owns.

**Principals.** A server configured with tokens knows each by a name: one token (``--token-env
VAR``, ``--token-file PATH`` holding only the token, ``token="..."`` from Python) is the
principal :data:`DEFAULT_PRINCIPAL`; a token file of ``NAME:TOKEN`` lines (``#`` comments and
blank lines ignored) names several. A request's ``Authorization: Bearer`` token is compared
with every token in constant time (:meth:`Principals.identify`).

**Weak tokens are refused** (:func:`check_token`): a token must carry at least 256 bits (32
bytes) of entropy as a generator makes them, estimated from its alphabet: 4 bits per
character when it is all hex digits (64 of them), 6 when all base64 / base64url characters
(43; ``=`` padding not counted), 6.5 for other printable ASCII (40); and at least 10 distinct
characters. ``python -c "import secrets; print(secrets.token_urlsafe(32))"`` or
``openssl rand -hex 32`` make one. A token file must not be readable by group or others
(``chmod 600``).

**Ownership** (:class:`SessionOwners`): a session is live on the connection that made it
(``session/new``) or opened it (``session/load``, ``session/resume``) until ``session/close``
or the connection's end; no other connection may load, resume or delete it meanwhile. The
principal that made a session is recorded (in memory, the :data:`MAX_RECORDS` most recent;
and in a directory when given, ``<sessions>/.principals``, so that it outlives the process):
only that principal may load, resume or delete it later. With several principals, a session
with no record (made before, or by another program, or forgotten) is refused to all of them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
import stat
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Final, final

__all__ = (
    "DEFAULT_PRINCIPAL",
    "MIN_TOKEN_BITS",
    "TOKEN_HINT",
    "Principals",
    "SessionOwners",
    "TokenError",
    "check_token",
    "read_token_file",
    "token_bits",
)

DEFAULT_PRINCIPAL: Final = "default"
"""The name of the one principal of a single token."""
MIN_TOKEN_BITS: Final = 256
"""The least entropy a token must carry (estimated by :func:`token_bits`)."""
MIN_DISTINCT_CHARACTERS: Final = 10
TOKEN_HINT: Final = 'python -c "import secrets; print(secrets.token_urlsafe(32))"'
MAX_RECORDS: Final = 65536
"""Sessions whose principal is remembered in memory (the most recently made or used)."""
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_BASE64: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=")


class TokenError(ValueError):
    """A token or token file that is refused (the message says why and what to do)."""


def token_bits(token: str) -> float:
    """The entropy of ``token`` in bits, estimated as a generator would make it (see the
    module docstring)."""
    chars = set(token)
    if chars <= _HEX:
        return 4.0 * len(token)
    if chars <= _BASE64:
        return 6.0 * len(token.rstrip("="))
    return math.log2(94) * len(token)


def check_token(token: str, *, where: str = "the bearer token") -> None:
    """Refuse (:class:`TokenError`) a token that is empty, not printable ASCII, or weak."""
    if not token:
        raise TokenError(f"{where} is empty")
    if not all("!" <= char <= "~" for char in token):
        raise TokenError(f"{where} has spaces or characters that are not printable ASCII")
    if token_bits(token) < MIN_TOKEN_BITS or len(set(token)) < MIN_DISTINCT_CHARACTERS:
        raise TokenError(
            f"{where} is too weak (under {MIN_TOKEN_BITS // 8} bytes of entropy): make one "
            f"with {TOKEN_HINT}"
        )


@final
class Principals:
    """Named bearer tokens (``name -> token``), each checked by :func:`check_token`."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        if not tokens:
            raise TokenError("no token is given")
        seen: set[str] = set()
        for name, token in tokens.items():
            if not _NAME.fullmatch(name):
                raise TokenError(
                    f"principal name {name!r}: use letters, digits and _.@- (64 at most)"
                )
            where = "the bearer token" if len(tokens) == 1 else f"the token of {name!r}"
            check_token(token, where=where)
            if token in seen:
                raise TokenError(f"the token of {name!r} is another principal's too")
            seen.add(token)
        self._tokens = {name: token.encode() for name, token in tokens.items()}

    @classmethod
    def single(cls, token: str) -> Principals:
        """One token: the principal :data:`DEFAULT_PRINCIPAL`."""
        return cls({DEFAULT_PRINCIPAL: token})

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Principals:
        """The principals of a token file (see :func:`read_token_file`)."""
        return cls(read_token_file(path))

    @property
    def names(self) -> list[str]:
        return list(self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    def identify(self, authorization: str | None) -> str | None:
        """The principal an ``Authorization`` header's bearer token names (``None``: none).

        Every token is compared, in constant time each."""
        if authorization is None:
            return None
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return None
        candidate = given.strip().encode("latin-1", errors="replace")
        found: str | None = None
        for name, token in self._tokens.items():
            if hmac.compare_digest(candidate, token) and found is None:
                found = name
        return found


def read_token_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """The tokens of a token file: one token alone (the principal ``default``), or
    ``NAME:TOKEN`` lines (``#`` comments and blank lines ignored). Refused
    (:class:`TokenError`) when group or others may read it, or it is malformed."""
    where = f"the token file {os.fspath(path)}"
    try:
        mode = os.stat(path).st_mode
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TokenError(f"{where}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TokenError(f"{where}: not UTF-8 text") from exc
    if mode & 0o077:
        raise TokenError(
            f"{where} may be read by group or others (mode {stat.S_IMODE(mode):o}): "
            f"chmod 600 {os.fspath(path)}"
        )
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    if not lines:
        raise TokenError(f"{where} is empty")
    if len(lines) == 1 and ":" not in lines[0]:
        return {DEFAULT_PRINCIPAL: lines[0]}
    tokens: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        name, sep, token = line.partition(":")
        name, token = name.strip(), token.strip()
        if not sep or not name or not token:
            raise TokenError(f"{where}: line {number}: expected NAME:TOKEN")
        if name in tokens:
            raise TokenError(f"{where}: the principal {name!r} is named twice")
        tokens[name] = token
    return tokens


@final
class SessionOwners:
    """Which connection holds each live session, and which principal made each session
    (in memory, and under ``directory`` when given); see the module docstring."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._live: dict[str, str] = {}
        """Session id -> the id of the connection holding it."""
        self._principals: OrderedDict[str, str] = OrderedDict()
        """Session id -> its principal's name (least recently used first)."""

    def holder(self, session_id: str) -> str | None:
        """The id of the connection holding ``session_id`` live (``None``: none)."""
        return self._live.get(session_id)

    def claim(self, session_id: str, connection_id: str, principal: str | None) -> None:
        """``session_id`` is live on the connection (its principal recorded when it has none)."""
        self._live.setdefault(session_id, connection_id)
        if principal is not None and self.principal(session_id) is None:
            self._record(session_id, principal)

    def release(self, session_id: str, connection_id: str) -> None:
        """The connection no longer holds ``session_id`` (closed, or the connection ended)."""
        if self._live.get(session_id) == connection_id:
            del self._live[session_id]

    def principal(self, session_id: str) -> str | None:
        """The principal that made ``session_id`` (``None``: no record)."""
        name = self._principals.get(session_id)
        if name is not None:
            self._principals.move_to_end(session_id)
            return name
        path = self._path(session_id)
        if path is None:
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("sessionId") != session_id:  # pyright: ignore[reportUnknownMemberType]
            return None
        name = record.get("principal")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(name, str):
            return None
        self._remember(session_id, name)
        return name

    def _record(self, session_id: str, principal: str) -> None:
        self._remember(session_id, principal)
        path = self._path(session_id)
        if path is None:
            return
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(
                json.dumps({"sessionId": session_id, "principal": principal}), encoding="utf-8"
            )
            temporary.replace(path)
        except OSError:
            import logging

            logging.getLogger("subagents.remote").warning(
                "cannot record the principal of session %s under %s", session_id, path.parent
            )

    def _remember(self, session_id: str, principal: str) -> None:
        self._principals[session_id] = principal
        self._principals.move_to_end(session_id)
        while len(self._principals) > MAX_RECORDS:
            self._principals.popitem(last=False)

    def _path(self, session_id: str) -> Path | None:
        if self.directory is None:
            return None
        digest = hashlib.sha256(session_id.encode("utf-8", errors="replace")).hexdigest()
        return self.directory / f"{digest[:40]}.json"
