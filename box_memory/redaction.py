"""Secrets out of every message: the one `redact` used by the Box client and Box OAuth.

Two ways a secret reaches a message: a value we hold (an access token, a client secret) echoed
back by a server, and a value we never saw in a shape that says what it is (`code=...` in a URL,
the user and password of `https://user:password@host/`, `"access_token": "..."` in a JSON body,
`Authorization: Bearer ...`). Both are masked with `MARK`, and the text comes back as one line (an
error message is one line on a terminal or in a log). A mask ends where the secret does: the
punctuation of the sentence around it (`...?token=abc: connection refused`) stays.
"""

from __future__ import annotations

import re

__all__ = ["MARK", "redact"]

MARK = "[redacted]"

_KEYS = r"access_token|refresh_token|client_secret|code_verifier|code|token|assertion|password"
# Sentence punctuation right after a value ends the value, not the mask: `...=abc.` keeps its dot.
_SENTENCE_END = r"(?=[.,;:!?)\]}>]*(?:[&\s\"'<>]|$))"
_QUERY = re.compile(rf"(?i)\b({_KEYS})=([^&\s\"'<>]+?){_SENTENCE_END}")
_JSON = re.compile(rf"(?i)(\"(?:{_KEYS})\"\s*:\s*\")([^\"]*)(\")")
_BEARER = re.compile(rf"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]+?{_SENTENCE_END}")
# A URL's userinfo (`scheme://user:password@`), up to the last `@` before the host's end.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#<>\"']+@")


def redact(text: object, *secrets: str | None) -> str:
    """`text` on one line with each of `secrets`, and anything shaped like a token, masked."""
    out = str(text)
    # Longest first so a secret that contains another is removed whole; values shorter than 4
    # characters are skipped because replacing them would shred ordinary words, hiding nothing.
    for value in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        out = out.replace(value, MARK)
    out = _USERINFO.sub(lambda m: f"{m.group(1)}{MARK}@", out)
    out = _QUERY.sub(lambda m: f"{m.group(1)}={MARK}", out)
    out = _JSON.sub(lambda m: f"{m.group(1)}{MARK}{m.group(3)}", out)
    out = _BEARER.sub(lambda m: f"{m.group(1)} {MARK}", out)
    return " ".join(out.split())
