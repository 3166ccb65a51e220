"""Tokens of ``serve --listen`` and ``serve --a2a`` (issue 34 points 3 and 5): weak tokens and
token files readable by others are refused at start with a one-line hint; a token file names
several principals (``NAME:TOKEN`` lines)."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Final

import pytest

from subagents.cli import main
from subagents.remote import Principals, RemoteServerConfigError, agent_command, serve_acp_http
from subagents.remote._principals import TOKEN_HINT, TokenError, check_token, read_token_file

STRONG: Final = "Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"
WEAK: Final = (
    "x",
    "s3cret",
    "file-token",
    "5e039bf640ff4de5b40ce43e4c3a5fd3",  # a uuid4's hex: 122 random bits
    "10c0effc-fece-4a7e-8fa9-a227bb91a427",  # a uuid4 (fixed: xdist's workers collect alike)
    "a" * 64,
)


def token_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


@pytest.mark.parametrize("token", WEAK)
def test_weak_tokens_are_refused_with_the_hint(token: str) -> None:
    """Issue 34: a token under 32 bytes of entropy (estimated from its alphabet and length;
    or made of few distinct characters) is refused, the message giving a generator."""
    with pytest.raises(TokenError, match="too weak") as refused:
        check_token(token)
    assert TOKEN_HINT in str(refused.value)


def test_what_generators_make_passes() -> None:
    """Issue 34: secrets.token_urlsafe(32), token_hex(32) (openssl rand -hex 32) and
    base64 of 32 random bytes (openssl rand -base64 32) all pass, every time."""
    import base64

    for _ in range(200):
        check_token(secrets.token_urlsafe(32))
        check_token(secrets.token_hex(32))
        check_token(base64.b64encode(secrets.token_bytes(32)).decode())


@pytest.mark.anyio
async def test_the_python_api_refuses_a_weak_token() -> None:
    """Issue 34: serve_acp_http refuses a weak token before it listens."""
    backend = agent_command([sys.executable, "-m", "subagents.agents.reference"])
    with pytest.raises(RemoteServerConfigError, match="too weak"):
        async with serve_acp_http(backend, token="s3cret"):
            pass


def test_a_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    """Issue 34: a token file readable by group or others (mode & 0o077) is refused, saying
    chmod 600."""
    for mode in (0o644, 0o640, 0o604):
        path = token_file(tmp_path / "token", STRONG, mode)
        with pytest.raises(TokenError, match="chmod 600"):
            Principals.from_file(path)


def test_a_token_file_names_principals(tmp_path: Path) -> None:
    """Issue 34: a token alone is the principal "default"; NAME:TOKEN lines (comments and
    blank lines ignored) name several; a name twice, a token twice or a line without a
    name are refused."""
    alone = token_file(tmp_path / "alone", f"{STRONG}\n")
    assert read_token_file(alone) == {"default": STRONG}
    other = secrets.token_urlsafe(32)
    named = token_file(tmp_path / "named", f"# the team\nalice:{STRONG}\n\nbob: {other}\n")
    principals = Principals.from_file(named)
    assert principals.names == ["alice", "bob"]
    assert principals.identify(f"Bearer {other}") == "bob"
    assert principals.identify(f"Bearer {STRONG}x") is None
    assert principals.identify(f"Basic {STRONG}") is None
    for text, why in (
        (f"alice:{STRONG}\nalice:{other}\n", "named twice"),
        (f"alice:{STRONG}\nbob:{STRONG}\n", "another principal's"),
        (f"alice:{STRONG}\n{other}\n", "NAME:TOKEN"),
        (f"alice:{STRONG}\nbob:short\n", "'bob' is too weak"),
    ):
        with pytest.raises(TokenError, match=why):
            Principals.from_file(token_file(tmp_path / "bad", text))


def test_the_cli_refuses_weak_tokens_and_open_token_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: `serve --listen` and `serve --a2a` exit 2 with one line and the hint for a
    weak --token-env token, and with `chmod 600` for a --token-file readable by others."""
    monkeypatch.setenv("WEAK_TOKEN", "s3cret")
    open_file = token_file(tmp_path / "token", STRONG, 0o644)
    for mode in ("--listen", "--a2a"):
        assert main(["serve", mode, "127.0.0.1:0", "--token-env", "WEAK_TOKEN"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "too weak" in err
        assert TOKEN_HINT in err
        assert main(["serve", mode, "127.0.0.1:0", "--token-file", str(open_file)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "chmod 600" in err
