"""Pieces of hand-built corpora (memory files written without the CLI, to pin ids and times)."""

from __future__ import annotations


def mem_id(n: int) -> str:
    """A valid, deterministic memory id (Crockford base32, 26 characters)."""
    digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    out = ""
    for _ in range(26):
        out = digits[n % 32] + out
        n //= 32
    return "mem_" + out
