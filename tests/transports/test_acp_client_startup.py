"""The first ACP connection of a process builds its models off the event loop (issue 17: a
harness's loop must not stall while a typed ACP child starts).

Each test runs in a fresh interpreter: the state under test (nothing imported, no validator
built) exists once per process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_first_connection_builds_the_models_in_a_worker_thread(backend: str) -> None:
    """The generated models are imported, and the client's validators built, by a thread that
    is not the event loop's, before the first message; the connection then works as before."""
    out = _run(
        f"""
        import sys, threading
        import anyio
        from subagents.transports import acp_client

        seen = []
        prepare = acp_client._prepare_models

        def recording():
            seen.append(threading.current_thread() is threading.main_thread())
            seen.append("subagents.protocol.acp._v1_generated" in sys.modules)
            prepare()

        acp_client._prepare_models = recording

        async def main():
            command = [sys.executable, "-m", "subagents.agents.reference"]
            async with acp_client.connect_agent(command) as connection:
                session = await connection.new_session(cwd="/tmp")
                result = await session.run("hello")
            print(seen, result.stop_reason)

        anyio.run(main, backend={backend!r})
        """
    )
    assert out == "[False, False] end_turn"


def test_prepare_builds_validators_once_and_no_dump_builds_a_serializer() -> None:
    """``acp.prepare`` leaves every given model with its validator, a second call builds nothing
    new, and dumping a message builds no serializer and imports nothing (issue 17: the dump is
    Python; pydantic_core's serializer costs ~1 MiB and its first use imports uuid, pathlib...)."""
    out = _run(
        """
        import sys
        from subagents.protocol import acp

        models = (acp.InitializeResponse, acp.SessionNotification)
        acp.prepare(*models)

        def built():
            return [m.__dict__["__acp_validator__"] for m in models]

        first = built()
        acp.prepare(*models)
        loaded = set(sys.modules)
        note = acp.from_wire(
            acp.SessionNotification,
            {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}},
        )
        wire = acp.to_wire(note)
        print(
            all(a is b for a, b in zip(first, built())),
            not any("__acp_serializer__" in m.__dict__ for m in models),
            sorted(set(sys.modules) - loaded),
            wire["update"]["sessionUpdate"],
        )
        """
    )
    assert out == "True True [] plan"


def test_models_built_in_several_threads_at_once_validate_correctly() -> None:
    """Schema building is safe to share between threads: models prepared by four threads while
    the main thread parses messages of the same types all validate and dump as they should."""
    out = _run(
        """
        import threading
        from subagents.protocol import acp

        names = [n for n in acp.__all__ if n.endswith(("Request", "Response", "Notification"))]
        models = [getattr(acp, n) for n in names if isinstance(getattr(acp, n), type)]
        start = threading.Barrier(5)

        def worker(offset):
            start.wait()
            acp.prepare(*models[offset::4])

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        start.wait()
        note = {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "hi"},
            },
        }
        parsed = [acp.from_wire(acp.SessionNotification, note) for _ in range(200)]
        for t in threads:
            t.join()
        assert all(acp.to_wire(p) == note for p in parsed)
        response = acp.from_wire(acp.InitializeResponse, {"protocolVersion": 1})
        print(len(models) > 40, response.protocol_version, acp.to_wire(parsed[0]) == note)
        """
    )
    assert out == "True 1 True"
