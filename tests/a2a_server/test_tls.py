"""HTTPS for ``serve --a2a`` (issue 21): with a certificate and key, ``serve_a2a_http`` serves
``https://`` (the TLS set-up shared with ``serve --listen``), its URLs and the agent card's
endpoint are ``https://``; plain HTTP and an untrusted certificate fail; the SDK's client and
``A2AProvider`` (trusting the test's certificate through ``SSL_CERT_FILE``) run turns over it.
Servers on 127.0.0.1 only; the certificate is made by the ``openssl`` command."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import anyio
import httpx
import pytest

pytest.importorskip("a2a.server")

from subagents.config import AgentSpec
from subagents.providers.a2a import A2AProvider
from subagents.providers.contract import (
    CancelSignal,
    SubagentOutcome,
    SubagentRequest,
    TextProgress,
)
from subagents.providers.factory import build_provider
from subagents.remote import RemoteServerConfigError
from subagents.remote.a2a_server import A2AServer, serve_a2a_http
from tests.a2a_server._client import a2a_client, send

REFERENCE: Final = AgentSpec("ref", "acp", (sys.executable, "-m", "subagents.agents.reference"))
WAIT: Final = 30.0
_LISTENING: Final = re.compile(r"listening on (https://\S+/) \(card: (\S+)\)\n")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's server is asyncio-based


@asynccontextmanager
async def serving_tls(certificate: tuple[Path, Path]) -> AsyncIterator[A2AServer]:
    """``serve_a2a_http`` on 127.0.0.1 with the certificate, fronting the reference agent."""
    cert, key = certificate
    async with (
        build_provider(REFERENCE) as provider,
        serve_a2a_http(provider, REFERENCE, port=0, tls_certfile=cert, tls_keyfile=key) as server,
    ):
        yield server


async def _stream(provider: A2AProvider, prompt: str) -> tuple[SubagentOutcome, str]:
    """Run ``prompt``; the outcome and the text that streamed."""
    with anyio.fail_after(WAIT):
        async with await provider.start(SubagentRequest(prompt), cancel=CancelSignal()) as run:
            events = run.progress()
            assert events is not None
            texts = [e.text async for e in events if isinstance(e, TextProgress)]
            return await run.result(), "".join(texts)


@pytest.mark.anyio
async def test_the_card_and_a_turn_over_https(certificate: tuple[Path, Path]) -> None:
    """Issue 21: with a certificate and key the server's URLs and the card's endpoint are
    https; the SDK's client (trusting the certificate) fetches the card and runs a streamed
    turn over it."""
    trust = ssl.create_default_context(cafile=str(certificate[0]))
    async with serving_tls(certificate) as server:
        assert server.tls
        assert server.url.startswith("https://127.0.0.1:")
        assert server.card_url.startswith("https://127.0.0.1:")
        async with httpx.AsyncClient(verify=trust, timeout=WAIT) as http:
            card = (await http.get(server.card_url)).json()
        async with a2a_client(server.url, verify=trust) as client:
            with anyio.fail_after(WAIT):
                turn = await send(client, "stream 3")
    assert card["supportedInterfaces"][0]["url"] == server.url
    assert turn.chunks == ["1 ", "2 ", "3 "]
    assert turn.final == "TASK_STATE_COMPLETED"


@pytest.mark.anyio
async def test_plain_http_and_an_untrusted_certificate_fail(
    certificate: tuple[Path, Path],
) -> None:
    """Issue 21: the TLS port answers no plain HTTP request, and a client that does not trust
    the certificate refuses the connection (nothing goes unchecked)."""
    async with serving_tls(certificate) as server, httpx.AsyncClient(timeout=WAIT) as http:
        plain = server.card_url.replace("https://", "http://", 1)
        with pytest.raises(httpx.TransportError):
            await http.get(plain)
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await http.get(server.card_url)


@pytest.mark.anyio
async def test_tls_needs_both_files_and_usable_ones(
    certificate: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 21: a certificate without its key (or a key without its certificate), or files
    that are not PEM, refuse to start with the ACP server's config errors."""
    cert, key = certificate
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    async with build_provider(REFERENCE) as provider:
        for half_cert, half_key in ((cert, None), (None, key)):
            with pytest.raises(RemoteServerConfigError, match="both a certificate file and a key"):
                async with serve_a2a_http(
                    provider, REFERENCE, port=0, tls_certfile=half_cert, tls_keyfile=half_key
                ):
                    pass
        with pytest.raises(RemoteServerConfigError, match="cannot use the TLS certificate"):
            async with serve_a2a_http(
                provider, REFERENCE, port=0, tls_certfile=bad, tls_keyfile=key
            ):
                pass


@pytest.mark.anyio
async def test_a2a_provider_trusts_the_certificate_from_ssl_cert_file(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: A2AProvider has no CA option; it trusts the certificate named by
    SSL_CERT_FILE (httpx reads it), so it runs a turn against the https server."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    async with (
        serving_tls(certificate) as server,
        A2AProvider(server.url, name="remote-tls") as provider,
    ):
        outcome, text = await _stream(provider, "stream 3")
    assert outcome.status == "completed", outcome.message
    assert text == "1 2 3 "


def _registry(directory: Path) -> Path:
    path = directory / "agents.toml"
    command = ", ".join(f'"{word}"' for word in REFERENCE.command)
    path.write_text(f'[agents.tls]\nprovider = "acp"\ncommand = [{command}]\n', encoding="utf-8")
    return path


@asynccontextmanager
async def _serve_process(directory: Path, certificate: tuple[Path, Path]) -> AsyncIterator[str]:
    """A ``subagents serve --a2a 127.0.0.1:0 --tls-cert --tls-key`` process; its https URL.
    Killed and reaped on the way out."""
    cert, key = certificate
    log = directory / "serve.log"
    command = [
        sys.executable, "-m", "subagents", "serve", "--a2a", "127.0.0.1:0",
        "--agent", "tls", "--config", str(_registry(directory)),
        "--tls-cert", str(cert), "--tls-key", str(key),
    ]  # fmt: skip
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            command, stdin=subprocess.DEVNULL, stdout=None, stderr=stderr
        )
    try:
        with anyio.fail_after(WAIT):
            while (found := _LISTENING.search(log.read_text(errors="replace"))) is None:
                assert process.returncode is None, log.read_text(errors="replace")
                await anyio.sleep(0.05)
        assert found.group(2).startswith("https://")
        yield found.group(1)
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.move_on_after(20, shield=True):
            await process.wait()
        await process.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a2a_provider_through_a_serve_a2a_process_with_tls(
    certificate: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: `serve --a2a --tls-cert --tls-key` says it listens on https; A2AProvider (on
    asyncio and on trio, trusting the certificate through SSL_CERT_FILE) runs a turn there."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    async with (
        _serve_process(tmp_path, certificate) as url,
        A2AProvider(url, name="remote-tls-process") as provider,
    ):
        outcome, text = await _stream(provider, "stream 2")
    assert outcome.status == "completed", outcome.message
    assert text == "1 2 "


def _serve_stderr(*options: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "subagents", "serve", *options],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stderr


def test_the_command_checks_the_tls_files_as_listen_does(
    certificate: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 21: `serve --a2a` with --tls-cert but no --tls-key, or a file that is not PEM,
    exits 2 saying why, with --listen's messages (one check for both; nothing is served)."""
    cert, key = certificate
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    a2a = ("--a2a", "127.0.0.1:0", "--agent", "reference")
    listen = ("--listen", "127.0.0.1:0")
    half = ("--tls-cert", str(cert))
    code, said = _serve_stderr(*a2a, *half)
    assert code == 2, said
    assert said == "subagents serve: TLS needs both a certificate file and a key file\n"
    assert _serve_stderr(*listen, *half) == (2, said)
    unusable = ("--tls-cert", str(bad), "--tls-key", str(key))
    code, said = _serve_stderr(*a2a, *unusable)
    assert code == 2, said
    assert said.startswith("subagents serve: cannot use the TLS certificate or key: ")
