"""Every file box-memory reads goes through the bounded regular-file reader (issue #25).

`safeio.read_regular` opens without blocking, reads only regular files and at most the cap of the
file's kind: a FIFO cannot hang a command, /dev/zero cannot fill memory. A plain `read_text`,
`read_bytes` or `open` of a path has neither guard, so the package is scanned for them: a new
stray read fails here. Reads through the workspace store (`ws.store.read_bytes`) are bounded by
the store itself. The emulator (box_memory/emulator) stands in for Box's servers and reads its
own data folder, so it is not scanned.

Then the caches that used stray reads before are driven with a FIFO and /dev/zero in place.
"""

from __future__ import annotations

import ast
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import box_memory

PACKAGE = Path(box_memory.__file__).parent
SKIPPED = {"emulator"}


def _sources() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if SKIPPED.isdisjoint(path.relative_to(PACKAGE).parts):
            yield path


def _read_mode(call: ast.Call, position: int) -> bool:
    """Whether the call's mode argument (at `position`, or mode=) is a constant that reads."""
    mode: ast.expr | None = call.args[position] if len(call.args) > position else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "r" in mode.value


def _stray_reads(path: Path, text: str | None = None) -> list[str]:
    tree = ast.parse(text if text is not None else path.read_text(encoding="utf-8"), str(path))
    rel = path.relative_to(PACKAGE.parent)
    in_store = rel.parts[:2] == ("box_memory", "store")
    found: list[str] = []
    # Functions that get their descriptor from open_regular may wrap it in os.fdopen.
    vetted: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            isinstance(n, ast.Name | ast.Attribute)
            and getattr(n, "id", getattr(n, "attr", "")) == "open_regular"
            for n in ast.walk(fn)
        ):
            vetted.update(id(n) for n in ast.walk(fn))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        where = f"{rel}:{node.lineno}: {ast.unparse(node)[:80]}"
        if isinstance(func, ast.Name) and func.id == "open":
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and str(first.value).startswith("/proc/"):
                continue  # the kernel's own report (no user's file: proc files report size 0)
            found.append(where)
        elif isinstance(func, ast.Attribute):
            receiver = ast.unparse(func.value)
            if func.attr == "read_text":
                found.append(where)
            elif func.attr == "read_bytes" and not (
                receiver.endswith("store") or (in_store and receiver == "self")
            ):
                # A store's read_bytes is bounded (store/local.py reads through safeio); a store
                # calling its own is the same read.
                found.append(where)
            elif func.attr == "fdopen" and _read_mode(node, 1) and id(node) not in vetted:
                found.append(where)
            elif func.attr == "open" and receiver != "os" and _read_mode(node, 0):
                found.append(where)  # Path.open("rb")
    return found


def test_no_module_reads_a_file_around_the_bounded_reader() -> None:
    stray = [hit for path in _sources() for hit in _stray_reads(path)]
    assert stray == [], "read these through safeio.read_regular:\n" + "\n".join(stray)


def test_the_scan_sees_a_stray_read() -> None:
    """The scan itself can fail: each form it looks for is caught in a sample module."""
    text = (
        "import os\nfrom pathlib import Path\n"
        "def a(p):\n    return Path(p).read_text()\n"
        "def b(p):\n    return p.read_bytes()\n"
        "def c(p):\n    return open(p).read()\n"
        "def d(fd):\n    return os.fdopen(fd, 'rb').read()\n"
        "def e(p):\n    return p.open('rb').read()\n"
        "def ok(ws, fd):\n    return ws.store.read_bytes('x'), os.fdopen(fd, 'wb')\n"
        "def ok2(p):\n    fd, _ = open_regular(p)\n    return os.fdopen(fd, 'rb').read()\n"
    )
    hits = _stray_reads(PACKAGE / "sample.py", text)
    assert [h.split(":")[1] for h in hits] == ["4", "6", "8", "10", "12"]


# --- the caches that read around it before -----------------------------------------------------

HANG_LIMIT_S = 30.0


def within(fn: Callable[[], Any], seconds: float = HANG_LIMIT_S) -> Any:
    """fn() in a thread: a call that blocks (a FIFO opened for reading) fails the test in time."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:  # handed back to the test
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"blocked for more than {seconds}s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def special(path: Path, what: str) -> None:
    assert what == "fifo"
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


# A FIFO only: a regression reading /dev/zero here would fill this process's memory (the /dev/zero
# cases run in a child process with a memory limit: tests/auth, tests/brain).
KINDS = ["fifo"]


@pytest.mark.parametrize("what", KINDS)
def test_the_tool_catalogue_cache_is_a_miss(what: str) -> None:
    from box_memory.box import catalogue

    url = "http://127.0.0.1:9/"
    special(catalogue.catalogue_file(url), what)
    assert within(lambda: catalogue.read_catalogue(url, "tok")) is None


@pytest.mark.parametrize("what", KINDS)
def test_the_cloud_listing_and_content_caches_are_a_miss(tmp_path: Path, what: str) -> None:
    from box_memory.store.cloud.cache import ContentCache
    from box_memory.store.cloud.listings import ListingSnapshot

    snap = ListingSnapshot(tmp_path / "ws-cache")
    special(snap.path, what)
    assert within(snap.load) is None
    cache = ContentCache(tmp_path / "content")
    special(tmp_path / "content" / "123.abc", what)
    assert within(lambda: cache.get("123", "abc")) is None


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_recall_cache_linked_to_a_device_is_not_chmod_ed(cli, ws: Path, dev_zero_mode: int) -> None:
    """The recall cache is made owner-only; through a link, the old chmod changed the link's
    target (as root: /dev/zero itself, for every program on the machine)."""
    from box_memory.recall.cache_db import cache_path
    from box_memory.workspace.resolve import open_workspace

    cli.json("write", "Use Postgres", "--title", "Database", "-w", str(ws))
    path = Path(cache_path(open_workspace(str(ws))))
    path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/zero")
    hits = within(lambda: cli.json("recall", "postgres", "-w", str(ws)))["data"]["hits"]
    assert [h["title"] for h in hits] == ["Database"]
    assert stat.S_IMODE(os.stat("/dev/zero").st_mode) == dev_zero_mode
