"""One redaction for every message that may carry a secret (Box client and Box OAuth alike)."""

from __future__ import annotations

from box_memory.box import client, credentials, oauth
from box_memory.redaction import MARK, redact


def test_the_client_and_oauth_share_one_redaction() -> None:
    assert client.redact is redact
    assert oauth.redact is redact
    assert credentials.redact is redact


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


def test_a_urls_user_and_password_are_masked() -> None:
    text = "not reachable at http://alice:pa55word@127.0.0.1:9/mcp: connection refused"
    assert redact(text) == f"not reachable at http://{MARK}@127.0.0.1:9/mcp: connection refused"
    # A token as the user name, an unencoded `@` in the password, several URLs in one message.
    out = redact("tried https://tok3n@mcp.example/ and (http://u:p@ss@h:1/x).")
    assert out == f"tried https://{MARK}@mcp.example/ and (http://{MARK}@h:1/x)."
    # An `@` that is not userinfo stays: an address, a path segment.
    assert redact("mail a@b.example about http://h/a@b") == "mail a@b.example about http://h/a@b"


def test_a_mask_keeps_the_sentences_punctuation() -> None:
    assert redact("at http://h/mcp?token=abc: refused.") == f"at http://h/mcp?token={MARK}: refused."
    assert redact("failed (code=xyz).") == f"failed (code={MARK})."
    assert redact("sent Bearer abc.def-ghi, then stopped.") == f"sent Bearer {MARK}, then stopped."
    assert redact("a JWT: token=aa.bb.cc; end") == f"a JWT: token={MARK}; end"
    assert redact("password=hunter2, said the log") == f"password={MARK}, said the log"
