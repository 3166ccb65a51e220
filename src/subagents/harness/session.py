"""Sessions of the in-process runtime: an id, lineage, and an append-only event log.

Every agent of the runtime, parent or child, runs in its own :class:`Session`. A session's log
is a sequence of :class:`SessionEvent` (a turn's start and end, user and assistant messages,
tool calls and their results, and, for a forked child, the seed it was given), persisted as
JSONL, one event per line, in ``<sessions directory>/<id>.jsonl`` as it happens (the first
line is a header with the id, the lineage and the snapshot key). :meth:`SessionStore.load`
reads it back.

Lineage: ``parent_session`` is the id of the session that delegated to this one (``None``
for a root), ``depth`` its nesting (a root is 0, its child 1: absolute, also below a parent
this store does not know, whose child is created at the depth it is given), and ``key`` a
deterministic path (``root``, ``root.1``, ``root.1.2``: the n-th child a session started),
which names the session's model snapshot file (:mod:`subagents.harness.snapshots`): ids are
random, keys are stable across runs. The header is written once, with the final lineage.

Keys are unique per store: across the roots of a runtime, the runtimes sharing a store and,
for a store on a directory, every process using that directory. Each new session *claims* its
key: in memory, and for a directory store also as a file ``<directory>/.keys/<key>`` created
exclusively (``O_EXCL``: two processes cannot both claim one key). A key already claimed is
bumped: a root's or a named key gets ``~2``, ``~3``... (``root~2``, whose children are
``root~2.1``...), a child's the next free number (``root.3`` when another process took
``root.2``). So a snapshot recording is never overwritten by another session's, and a run alone
(or the same sequence of runs on a fresh folder, as a replay does) gets the same keys every
time. A directory used before keys were claimed has the keys of its session files claimed
on first use.

A fork's seed (:func:`balanced_prefix`) holds completed turns only: the turns that ended
``completed`` (and any seed the session itself started with), never a cancelled or failed
turn, nor the one in flight.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, cast, final

from ..protocol.jsonrpc import JsonValue
from .llm.types import Message, ToolCall, message_from_json, message_to_json

__all__ = (
    "EventKind",
    "Session",
    "SessionError",
    "SessionEvent",
    "SessionStore",
    "TurnStatus",
    "balanced_prefix",
)

FORMAT: Final = "subagents-session/1"
EMPTY_ANSWER: Final = "(no answer)"
"""What a seed says for a completed turn whose final answer was blank (some model APIs
refuse an assistant message without content)."""

EventKind: TypeAlias = Literal[
    "turn_start", "user", "assistant", "tool_call", "tool_result", "turn_end", "seed"
]
TurnStatus: TypeAlias = Literal["completed", "cancelled", "failed"]


class SessionError(Exception):
    """A session file that cannot be read, or a misuse of the store."""


@final
@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One entry of a session's log.

    - ``turn_start`` / ``turn_end`` bound a turn (``turn_end`` carries ``status`` and, when
      not completed, ``text`` says why);
    - ``user``: the prompt (``text``); ``assistant``: the model's text (``text``) — its tool
      calls follow as ``tool_call`` events (``call``), each answered by a ``tool_result``
      (``call_id``, ``text``, ``is_error``);
    - ``seed``: a forked child's copy of its parent's history (``messages``).
    """

    kind: EventKind
    text: str = ""
    call: ToolCall | None = None
    call_id: str | None = None
    is_error: bool = False
    status: TurnStatus | None = None
    messages: tuple[Message, ...] = ()

    def to_json(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = {"kind": self.kind}
        if self.text:
            data["text"] = self.text
        if self.call is not None:
            data["call"] = {
                "id": self.call.id,
                "name": self.call.name,
                "arguments": dict(self.call.arguments),
            }
        if self.call_id is not None:
            data["call_id"] = self.call_id
        if self.is_error:
            data["is_error"] = True
        if self.status is not None:
            data["status"] = self.status
        if self.messages:
            data["messages"] = [message_to_json(m) for m in self.messages]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionEvent:
        call = cast("Mapping[str, Any] | None", data.get("call"))
        return cls(
            cast(EventKind, data["kind"]),
            str(data.get("text", "")),
            ToolCall(str(call["id"]), str(call["name"]), dict(call["arguments"]))
            if call is not None
            else None,
            cast("str | None", data.get("call_id")),
            bool(data.get("is_error", False)),
            cast("TurnStatus | None", data.get("status")),
            tuple(message_from_json(m) for m in data.get("messages") or ()),
        )


def _messages(events: Iterable[SessionEvent]) -> list[Message]:
    """The conversation the events describe, as model messages."""
    messages: list[Message] = []
    pending_text: str | None = None
    pending_calls: list[ToolCall] = []

    def flush() -> None:
        nonlocal pending_text
        if pending_text is not None or pending_calls:
            messages.append(Message("assistant", pending_text or "", tuple(pending_calls)))
        pending_text = None
        pending_calls.clear()

    for event in events:
        if event.kind == "seed":
            flush()
            messages.extend(event.messages)
        elif event.kind == "user":
            flush()
            messages.append(Message("user", event.text))
        elif event.kind == "assistant":
            flush()
            pending_text = event.text
        elif event.kind == "tool_call" and event.call is not None:
            if pending_text is None:
                pending_text = ""
            pending_calls.append(event.call)
        elif event.kind == "tool_result":
            flush()
            messages.append(
                Message("tool", event.text, tool_call_id=event.call_id, is_error=event.is_error)
            )
    flush()
    return messages


def _seedable(message: Message) -> Message:
    """``message`` without a blank assistant text: beside tool calls it is emptied, alone it
    becomes :data:`EMPTY_ANSWER` (an Anthropic assistant message needs non-blank content)."""
    if message.role != "assistant" or message.text.strip():
        return message
    return replace(message, text="" if message.tool_calls else EMPTY_ANSWER)


def balanced_prefix(events: Sequence[SessionEvent]) -> tuple[Message, ...]:
    """The history a fork is seeded with: completed turns only, in order.

    It holds the messages of every turn that ended ``completed`` and of every ``seed`` event
    (a forked session's inherited history, itself completed turns). Cancelled and failed
    turns are left out entirely, and so is the turn in flight (its delegation call has no
    result yet). So the roles alternate as every model adapter expects: each turn is
    ``user``, then ``assistant`` messages with tool calls each followed by their ``tool``
    results, then the ``assistant``'s final answer (never two user messages in a row, never
    a call without its result, never a blank assistant message: see :data:`EMPTY_ANSWER`).
    """
    kept: list[SessionEvent] = []
    turn: list[SessionEvent] | None = None
    for event in events:
        if event.kind == "turn_start":
            turn = []
        elif event.kind == "turn_end":
            if turn is not None and event.status == "completed":
                kept.extend(turn)
            turn = None
        elif turn is not None:
            turn.append(event)
        elif event.kind == "seed":
            kept.append(event)
    return tuple(_seedable(message) for message in _messages(kept))


@final
class Session:
    """An agent's session: id, lineage, and its append-only log (written through to its
    file when the session has one)."""

    def __init__(
        self,
        session_id: str,
        *,
        key: str,
        parent_session: str | None = None,
        depth: int = 0,
        path: Path | None = None,
        events: Iterable[SessionEvent] = (),
        children: int = 0,
        config: Mapping[str, JsonValue] | None = None,
    ) -> None:
        self.id = session_id
        self.key = key
        self.parent_session = parent_session
        self.depth = depth
        self.path = path
        self.config: dict[str, JsonValue] = dict(config or {})
        """What the runtime needs to run this session again (system prompt, limits, ...)."""
        self._events: list[SessionEvent] = list(events)
        self._children = children

    @property
    def events(self) -> tuple[SessionEvent, ...]:
        return tuple(self._events)

    def header(self) -> dict[str, JsonValue]:
        return {
            "format": FORMAT,
            "id": self.id,
            "key": self.key,
            "parent_session": self.parent_session,
            "depth": self.depth,
            "config": dict(self.config),
        }

    def append(self, event: SessionEvent) -> None:
        """Log ``event`` (and write it to the session's file at once)."""
        self._events.append(event)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as file:
                file.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")

    def messages(self) -> tuple[Message, ...]:
        """The whole conversation so far, as model messages."""
        return tuple(_messages(self._events))

    def balanced_prefix(self) -> tuple[Message, ...]:
        """See :func:`balanced_prefix`."""
        return balanced_prefix(self._events)

    def next_child_key(self) -> str:
        """The key of the next child this session starts (``<key>.<n>``; its store may give
        the child a later number when another session claimed this one)."""
        self._children += 1
        return f"{self.key}.{self._children}"

    def turns(self) -> Iterator[tuple[SessionEvent, ...]]:
        """The log split into turns (each from ``turn_start`` to ``turn_end`` or the end)."""
        current: list[SessionEvent] = []
        for event in self._events:
            if event.kind == "turn_start" and current:
                yield tuple(current)
                current = []
            current.append(event)
        if current:
            yield tuple(current)


def _checked_id(session_id: str) -> str:
    """``session_id``, if it can name a session file (non-empty, no separator, no leading
    dot); else a :class:`SessionError`."""
    if not session_id or os.sep in session_id or session_id.startswith("."):
        raise SessionError(f"not a session id: {session_id!r}")
    return session_id


def _checked_key(key: str) -> str:
    """``key``, if it can name a file (a snapshot, a claim); else a :class:`SessionError`."""
    if not key or "/" in key or os.sep in key or "\0" in key or key.startswith("."):
        raise SessionError(f"not a session key: {key!r}")
    return key


_KEYS: Final = ".keys"
"""The directory of a directory store's key claims (no session id starts with a dot)."""
_MAX_BUMPS: Final = 100_000
"""Bound on the keys tried for one new session (a store that cannot claim any fails)."""


def _header_key(path: Path) -> str | None:
    """The key in the header of the session file at ``path`` (``None``: none readable)."""
    try:
        with path.open(encoding="utf-8") as file:
            header = json.loads(file.readline() or "null")
    except (OSError, ValueError):
        return None
    if isinstance(header, dict):
        key = cast(dict[str, Any], header).get("key")
        return key if isinstance(key, str) else None
    return None


@final
@dataclass
class SessionStore:
    """Sessions by id, persisted under ``directory`` (``None``: in memory only)."""

    directory: Path | None = None
    _live: dict[str, Session] = field(default_factory=dict[str, Session])
    _claimed: set[str] = field(default_factory=set[str])
    """Keys this store knows are taken (claimed here, or found claimed)."""
    _numbered: dict[str, int] = field(default_factory=dict[str, int])
    """The last number claimed under each prefix (``root`` -> 2: ``root.2``)."""
    _keys_ready: bool = False

    def __post_init__(self) -> None:
        if self.directory is not None:
            self.directory = Path(self.directory)
            self.directory.mkdir(parents=True, exist_ok=True)

    # -- keys

    def _keys_directory(self) -> Path:
        """``<directory>/.keys``, made (with the keys of the sessions already there claimed)
        when the directory has none yet."""
        assert self.directory is not None
        keys = self.directory / _KEYS
        if self._keys_ready or keys.is_dir():
            self._keys_ready = True
            return keys
        # Claim the keys of the sessions already there in a directory of our own, then put it
        # in place in one rename. When another process put its own there first, the rename
        # fails (a directory holding claims is not replaced) or replaces one still empty:
        # either way every process claims in the one .keys, which has the old keys.
        staging = self.directory / f"{_KEYS}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        staging.mkdir()
        try:
            for path in self.directory.glob("*.jsonl"):
                key = _header_key(path)
                if key is not None:
                    with suppress(SessionError, OSError):
                        (staging / _checked_key(key)).touch(exist_ok=True)
            try:
                staging.rename(keys)
            except OSError:
                if not keys.is_dir():
                    raise
        except OSError as exc:
            raise SessionError(f"cannot make the key claims directory {keys}: {exc}") from exc
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        self._keys_ready = True
        return keys

    def _claim(self, key: str) -> bool:
        """Claim ``key`` for a new session: ``False`` when it is taken already."""
        _checked_key(key)
        if key in self._claimed:
            return False
        if self.directory is not None:
            path = self._keys_directory() / key
            try:
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                self._claimed.add(key)
                return False
            except OSError as exc:
                raise SessionError(f"cannot claim session key {key!r} at {path}: {exc}") from exc
            os.close(descriptor)
        self._claimed.add(key)
        return True

    def _claim_named(self, key: str) -> str:
        """``key``, or the first of ``key~2``, ``key~3``... not taken, claimed."""
        for n in range(1, _MAX_BUMPS):
            candidate = key if n == 1 else f"{key}~{n}"
            if self._claim(candidate):
                return candidate
        raise SessionError(f"no free session key like {key!r} in this store")

    def _claim_numbered(self, prefix: str, after: int) -> tuple[str, int]:
        """The first ``<prefix>.<n>`` not taken with ``n > after`` (and after the numbers this
        store claimed under ``prefix`` already), claimed, and its ``n``."""
        n = max(after, self._numbered.get(prefix, 0))
        for _ in range(_MAX_BUMPS):
            n += 1
            if self._claim(f"{prefix}.{n}"):
                self._numbered[prefix] = n
                return f"{prefix}.{n}", n
        raise SessionError(f"no free session key below {prefix!r} in this store")

    def path_for(self, session_id: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / f"{_checked_id(session_id)}.jsonl"

    def create(
        self,
        *,
        parent: Session | None = None,
        parent_id: str | None = None,
        depth: int | None = None,
        key: str | None = None,
        key_prefix: str | None = None,
        session_id: str | None = None,
        config: Mapping[str, JsonValue] | None = None,
    ) -> Session:
        """A new session, its header written once its lineage is final.

        - With ``parent``: its child (``parent.depth + 1``; ``key`` or the parent's next child
          key). ``parent_id`` and ``depth`` are then not given.
        - Else a session below ``parent_id``, a parent this store does not know (``None``: a
          root), at ``depth`` (default 0) with ``key`` (default ``root``), or with
          ``key_prefix`` the key ``<key_prefix>.<n>``, the n-th such session of the store.

        The key is claimed, unique in the store (see the module docstring: a key taken is
        bumped). ``session_id`` is the new session's id (default a fresh uuid4); it must be a
        valid id (see :meth:`path_for`) that this store does not have yet."""
        if key is not None and key_prefix is not None:
            raise SessionError("a session has a key or a key prefix, not both")
        if parent is not None and (parent_id is not None or depth is not None):
            raise SessionError("a child of a known parent takes its lineage from the parent")
        if depth is not None and depth < 0:
            raise SessionError(f"a session depth cannot be negative: {depth}")
        if session_id is None:
            session_id = str(uuid.uuid4())
        path = self.path_for(_checked_id(session_id))
        if session_id in self._live or (path is not None and path.exists()):
            raise SessionError(f"session {session_id} already exists")
        if parent is not None:
            if key is not None:
                key = self._claim_named(key)
            else:
                key = parent.next_child_key()
                if not self._claim(key):
                    key, parent._children = self._claim_numbered(parent.key, parent._children)  # pyright: ignore[reportPrivateUsage]
            session = Session(
                session_id,
                key=key,
                parent_session=parent.id,
                depth=parent.depth + 1,
                path=path,
                config=config,
            )
        else:
            if key_prefix is not None:
                key = self._claim_numbered(_checked_key(key_prefix), 0)[0]
            else:
                key = self._claim_named(key or "root")
            session = Session(
                session_id,
                key=key,
                parent_session=parent_id,
                depth=depth or 0,
                path=path,
                config=config,
            )
        if path is not None:
            path.write_text(
                json.dumps(session.header(), ensure_ascii=False) + "\n", encoding="utf-8"
            )
        self._live[session_id] = session
        return session

    def get(self, session_id: str) -> Session | None:
        """A session of this store: live, else loaded from its file; ``None`` if unknown (as
        is an id that cannot name a session file, such as another store's ``acp:a/b``)."""
        session = self._live.get(session_id)
        if session is not None:
            return session
        try:
            path = self.path_for(session_id)
        except SessionError:
            return None
        if path is None or not path.exists():
            return None
        return self.load(session_id)

    def _count_children(self, session_id: str) -> int:
        """How many sessions of the directory name ``session_id`` as their parent."""
        assert self.directory is not None
        count = 0
        for path in self.directory.glob("*.jsonl"):
            try:
                with path.open(encoding="utf-8") as file:
                    header = json.loads(file.readline() or "null")
            except (OSError, ValueError):
                continue
            if isinstance(header, dict):
                parent = cast(dict[str, Any], header).get("parent_session")
                count += parent == session_id
        return count

    def load(self, session_id: str) -> Session:
        """Read a session back from its file (a :class:`SessionError` names what is wrong)."""
        path = self.path_for(session_id)
        if path is None:
            raise SessionError("this store keeps sessions in memory only")
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise SessionError(f"cannot read session {session_id}: {exc}") from exc
        if not lines:
            raise SessionError(f"session file {path} is empty")
        try:
            header: Any = json.loads(lines[0])
            events = [SessionEvent.from_json(json.loads(line)) for line in lines[1:] if line]
        except (ValueError, KeyError, TypeError) as exc:
            raise SessionError(f"session file {path} is malformed: {exc}") from exc
        if not isinstance(header, dict):
            raise SessionError(f"session file {path} has no {FORMAT} header")
        header = cast(dict[str, Any], header)
        if header.get("format") != FORMAT:
            raise SessionError(f"session file {path} has no {FORMAT} header")
        children = self._count_children(str(header["id"]))
        session = Session(
            str(header["id"]),
            key=str(header["key"]),
            parent_session=cast("str | None", header.get("parent_session")),
            depth=int(header.get("depth", 0)),
            path=path,
            events=events,
            children=children,
            config=cast("dict[str, JsonValue]", header.get("config") or {}),
        )
        self._live[session.id] = session
        return session
