"""Per-session model snapshots: record a session's model exchanges, replay them keylessly.

A snapshot file holds one session's exchanges with the model, in order, one JSON object per
line: ``{"request": ..., "chunks": [...], "response": ...}`` (``chunks``: the streamed text
deltas, replayed through ``on_text`` as they came) or ``{"request": ..., "error": {...}}``
for a call that failed. Files are named by the session's **key** (``root.1.2``: stable across
runs, unlike session ids), so a nested scenario (parent -> child -> grandchild, spawn or
fork) records one file per session and replays without a key and without the network. Keys
are unique per session store (per sessions folder, across processes), so no session's
recording overwrites another's; in one process a file already being recorded is refused
rather than overwritten (:meth:`SnapshotStore.adapter`).

Replay fails loudly: a request that differs from the recorded one, or one more call than was
recorded, raises :class:`SnapshotMismatch` (an ``LlmError`` of kind ``config``, so the turn
ends ``failed`` with a message naming the file, the exchange and the first difference).
"""

from __future__ import annotations

import gc
import json
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, cast, final

import anyio

from ..cancel import CancelSignal
from ..protocol.jsonrpc import JsonValue
from .llm.types import (
    LlmAdapter,
    LlmCancelled,
    LlmError,
    LlmErrorKind,
    ModelRequest,
    ModelResponse,
    TextCallback,
    request_to_json,
    response_from_json,
    response_to_json,
)

__all__ = (
    "RecordingAdapter",
    "ReplayAdapter",
    "SnapshotMismatch",
    "SnapshotMode",
    "SnapshotStore",
    "first_difference",
)

SnapshotMode: TypeAlias = Literal["record", "replay"]


class SnapshotMismatch(LlmError):
    """Replay met a request its snapshot does not have."""

    def __init__(self, message: str) -> None:
        super().__init__("config", message)


def first_difference(recorded: Any, actual: Any, path: str = "request") -> str | None:
    """Where two JSON values first differ (``None`` when equal), as ``path: recorded != actual``."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        recorded = cast(dict[str, Any], recorded)
        actual = cast(dict[str, Any], actual)
        for key in sorted(set(recorded) | set(actual)):
            if key not in recorded or key not in actual:
                return f"{path}.{key}: present in only one of recorded / actual"
            found = first_difference(recorded[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(actual, list):
        recorded = cast(list[Any], recorded)
        actual = cast(list[Any], actual)
        for index, (old, new) in enumerate(zip(recorded, actual, strict=False)):
            found = first_difference(old, new, f"{path}[{index}]")
            if found:
                return found
        if len(recorded) != len(actual):
            return f"{path}: {len(recorded)} recorded items, {len(actual)} now"
        return None
    if recorded != actual:
        return f"{path}: recorded {_short(recorded)} != now {_short(actual)}"
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


@final
class RecordingAdapter:
    """Passes calls to ``inner`` and appends each exchange to ``path``."""

    def __init__(self, inner: LlmAdapter, path: Path) -> None:
        self.inner = inner
        self.path = path

    def _write(self, entry: Mapping[str, JsonValue]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")

    async def complete(
        self,
        request: ModelRequest,
        *,
        cancel: CancelSignal,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        chunks: list[str] = []

        def relay(text: str) -> None:
            chunks.append(text)
            if on_text is not None:
                on_text(text)

        recorded = request_to_json(request)
        try:
            response = await self.inner.complete(request, cancel=cancel, on_text=relay)
        except LlmCancelled:
            raise  # not an exchange: a replay is cancelled by its own signal
        except LlmError as exc:
            error: dict[str, JsonValue] = {
                "kind": exc.kind,
                "message": exc.message,
                "status": exc.status,
                "retryable": exc.retryable,
            }
            self._write({"request": recorded, "error": error})
            raise
        entry: dict[str, JsonValue] = {
            "request": recorded,
            "chunks": list(chunks),
            "response": response_to_json(response),
        }
        self._write(entry)
        return response


@final
class ReplayAdapter:
    """Answers calls from the snapshot at ``path``, in order, checking each request."""

    def __init__(self, path: Path, *, chunk_delay: float = 0.0) -> None:
        self.path = path
        self.chunk_delay = chunk_delay
        self._entries: list[dict[str, Any]] | None = None
        self._next = 0

    def _load(self) -> list[dict[str, Any]]:
        if self._entries is None:
            try:
                lines = self.path.read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise SnapshotMismatch(
                    f"no snapshot to replay at {self.path} ({exc.strerror}): record it first"
                ) from exc
            try:
                self._entries = [cast(dict[str, Any], json.loads(line)) for line in lines if line]
            except ValueError as exc:
                raise SnapshotMismatch(f"snapshot {self.path} is malformed: {exc}") from exc
        return self._entries

    async def complete(
        self,
        request: ModelRequest,
        *,
        cancel: CancelSignal,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        entries = self._load()
        index = self._next
        if index >= len(entries):
            raise SnapshotMismatch(
                f"snapshot {self.path.name}: call {index + 1} was not recorded "
                f"(the snapshot has {len(entries)})"
            )
        entry = entries[index]
        difference = first_difference(entry.get("request"), request_to_json(request))
        if difference is not None:
            raise SnapshotMismatch(
                f"snapshot {self.path.name}: call {index + 1} differs from the recording: "
                f"{difference}"
            )
        self._next += 1
        if cancel.cancelled:
            raise LlmCancelled(cancel.reason or "cancelled")
        error = entry.get("error")
        if isinstance(error, dict):
            error = cast(dict[str, Any], error)
            raise LlmError(
                cast(LlmErrorKind, error.get("kind", "http")),
                str(error.get("message", "")),
                status=cast("int | None", error.get("status")),
                retryable=bool(error.get("retryable", False)),
            )
        for chunk in cast(Sequence[str], entry.get("chunks") or ()):
            if self.chunk_delay:
                with cancel.linked_scope():
                    await anyio.sleep(self.chunk_delay)
            if cancel.cancelled:
                raise LlmCancelled(cancel.reason or "cancelled")
            if on_text is not None:
                on_text(chunk)
        return response_from_json(cast(Mapping[str, Any], entry["response"]))


@final
class SnapshotStore:
    """Snapshot files in ``directory``, one per session key; ``mode`` records or replays."""

    def __init__(self, directory: str | Path, mode: SnapshotMode) -> None:
        self.directory = Path(directory)
        self.mode: SnapshotMode = mode

    def path_for(self, key: str) -> Path:
        if not key or "/" in key or key.startswith("."):
            raise ValueError(f"not a session key: {key!r}")
        return self.directory / f"{key}.jsonl"

    def adapter(self, key: str, inner: LlmAdapter | None) -> LlmAdapter:
        """The adapter for the session ``key``: ``inner`` recorded, or the replay. Recording
        starts a fresh file (an old one for the key is replaced: re-recording), unless that
        file is being recorded in this process already (another session with the same key:
        two runtimes whose session stores are not one): then a ``ValueError`` rather than
        overwrite that recording. Keys are unique per session store, and per sessions folder
        across processes (:mod:`subagents.harness.session`)."""
        path = self.path_for(key)
        if self.mode == "replay":
            return ReplayAdapter(path)
        if inner is None:
            raise ValueError("recording needs the real adapter to record")
        resolved = path.resolve()
        if _RECORDING.get(resolved) is not None:
            gc.collect()  # a recorder only a reference cycle keeps is no recording any more
            if _RECORDING.get(resolved) is not None:
                raise ValueError(
                    f"snapshot {path} is already being recorded in this process by another "
                    f"session with the key {key!r}: recording it again would overwrite that "
                    "recording. Give the runtimes one sessions folder (or one SessionStore): "
                    "its keys are unique"
                )
        path.unlink(missing_ok=True)
        recorder = RecordingAdapter(inner, path)
        _RECORDING[resolved] = recorder
        return recorder


_RECORDING: Final[weakref.WeakValueDictionary[Path, RecordingAdapter]] = (
    weakref.WeakValueDictionary()
)
"""The snapshot files being recorded in this process (while their recorder lives)."""
