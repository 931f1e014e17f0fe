"""A spawned HTTP server: a free loopback port to give it, the wait until it answers, and the MCP
initialize request that opens a session by hand."""

from __future__ import annotations

import socket
import subprocess
import time

import httpx2

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def free_port() -> int:
    """A loopback port nothing listens on (at the moment of asking)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_answering(url: str, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """Until `url` gives any HTTP answer; fails at once if `proc` exits, or after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}: {proc.stderr.read()!r}")  # type: ignore[union-attr]
        try:
            # Any HTTP answer means the app is up (a GET would open a long-lived event stream).
            httpx2.post(url, json={}, timeout=2.0)
            return
        except httpx2.TransportError:
            time.sleep(0.05)
    raise AssertionError(f"serve did not answer on {url} within {timeout}s")
