"""One redaction for every message that may carry a secret (Box client and Box OAuth alike)."""

from __future__ import annotations

from box_memory.mcp import auth, client
from box_memory.redaction import MARK, redact


def test_the_client_and_oauth_share_one_redaction() -> None:
    assert client.redact is redact
    assert auth.redact is redact


def test_every_shape_of_secret_is_masked_on_one_line() -> None:
    text = (
        'Box said {"access_token": "at-123456", "refresh_token":"rt-654321"}\n'
        "GET /cb?code=c0de5&state=abc HTTP/1.1\r\n"
        "Authorization: bearer eyJhbGciOi.x-y_z and the client secret MYSECRETVALUE"
    )
    out = redact(text, "MYSECRETVALUE", None, "", "ab")
    for secret in ("at-123456", "rt-654321", "c0de5", "eyJhbGciOi", "MYSECRETVALUE"):
        assert secret not in out
    assert "\n" not in out and "\r" not in out
    assert f'"access_token": "{MARK}"' in out and f"code={MARK}" in out and f"bearer {MARK}" in out
    # What is not a secret stays readable: other parameters, and values too short to matter.
    assert "state=abc" in out and "ab" in out and "error_code=x" in redact("error_code=x")


def test_a_secret_inside_another_is_removed_whole() -> None:
    assert redact("token value: abcdefgh", "abcd", "abcdefgh") == f"token value: {MARK}"
