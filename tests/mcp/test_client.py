"""BoxMCPClient against the real emulator over HTTP on 127.0.0.1 (no mocked server)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from box_memory.box.client import (
    OPTIONAL_TOOLS,
    READ_TOOLS,
    REQUIRED_TOOLS,
    BoxMCPClient,
    redact,
)
from box_memory.box.payload import conflicts, listing
from box_memory.emulator.testing import Emulator, running_emulator
from box_memory.errors import (
    AuthError,
    BackendUnavailable,
    BoxMemoryError,
    BoxToolError,
    ToolDisabled,
    ToolMissing,
)
from box_memory.maintenance.mcp_check import mcp_check
from tests.helpers.net import free_port

TOKEN = "test-token-0123456789"
INDEX_TEXT = json.dumps({"version": 1, "folder_id": None, "entries": [{"id": "mem_1"}]}, indent=1)
DEFAULTS = {
    "paging": "marker",
    "shape": "structured",
    "ids": "string",
    "latency_ms": 0,
    "error_rate": 0.0,
    "error_kinds": ("429", "500"),
    "drop_rate": 0.0,
    "disabled_tools": (),
    "hidden_tools": (),
    "sessions": "stateless",
}


def populate(root: Path) -> None:
    (root / "notes").mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (root / "notes" / name).write_text(f"# {name}\nbody of {name}\n", encoding="utf-8")
    (root / "memories").mkdir()
    (root / "memories" / "_index.json").write_text(INDEX_TEXT, encoding="utf-8")
    for i in range(5):
        (root / f"f{i}.txt").write_text(f"file {i}\n", encoding="utf-8")


@pytest.fixture(scope="module")
def shared_emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    root = tmp_path_factory.mktemp("mcp-client") / "box"
    root.mkdir()
    populate(root)
    with running_emulator(root, token=TOKEN) as emu:
        yield emu


@pytest.fixture
def emu(shared_emu: Emulator) -> Iterator[Emulator]:
    """The shared emulator with default switches, the one token, and an empty call log."""
    shared_emu.configure(**DEFAULTS, seed=0)
    shared_emu.set_tokens([TOKEN])
    shared_emu.reset_calls()
    if not shared_emu.running:
        shared_emu.start()
    yield shared_emu
    shared_emu.configure(**DEFAULTS)
    shared_emu.set_tokens([TOKEN])


@pytest.fixture
def delays() -> list[float]:
    return []


def client(emu: Emulator, delays: list[float], token: object = TOKEN, **kw: object) -> BoxMCPClient:
    """A client whose back-off sleeps are recorded instead of slept (keeps the suite fast)."""
    kw.setdefault("timeout", 5.0)
    return BoxMCPClient(emu.url, token, sleep=delays.append, **kw)  # type: ignore[arg-type]


def walk_root(box: BoxMCPClient, limit: int = 3) -> tuple[list[dict], int]:
    """List folder 0 page by page in whatever paging style the server uses -> (entries, pages)."""
    entries: list[dict] = []
    marker: str | None = None
    offset = 0
    pages = 0
    while True:
        args: dict = {"folder_id": "0", "limit": limit}
        if marker:
            args["marker"] = marker
        if offset:
            args["offset"] = offset
        page = listing(box.call("list_folder_content_by_folder_id", args))
        pages += 1
        entries.extend(page.entries)
        if page.next_marker:
            marker = page.next_marker
        elif page.total_count is not None and (page.offset or 0) + len(page.entries) < page.total_count:
            offset = (page.offset or 0) + len(page.entries)
        else:
            return entries, pages
        assert pages < 20


# --- catalogue and calls ----------------------------------------------------------------------


def test_catalogue_is_discovered_once(emu, delays):
    with client(emu, delays) as box:
        assert all(box.has_tool(name) for name in REQUIRED_TOOLS)
        assert not box.has_tool("no_such_tool")
        assert "inputSchema" in box.tools["get_file_details"]
        assert box.call_count == 0
    assert emu.calls == []


@pytest.mark.parametrize("paging", ["marker", "offset"])
@pytest.mark.parametrize("shape", ["structured", "text"])
@pytest.mark.parametrize("ids", ["string", "number"])
def test_listing_in_every_shape(emu, delays, paging, shape, ids):
    emu.configure(paging=paging, shape=shape, ids=ids)
    with client(emu, delays) as box:
        entries, pages = walk_root(box, limit=3)
        assert box.call_count == pages == 3  # 2 folders + 5 files, 3 per page
    names = [e["name"] for e in entries]
    assert names[:2] == ["memories", "notes"]  # folders first
    assert sorted(names[2:]) == [f"f{i}.txt" for i in range(5)]
    assert all(isinstance(e["id"], str) and e["id"].isdigit() for e in entries)


@pytest.mark.parametrize("shape", ["structured", "text"])
@pytest.mark.parametrize("ids", ["string", "number"])
def test_file_details_ids_are_strings(emu, delays, shape, ids):
    emu.configure(shape=shape, ids=ids)
    file_id = emu.fs.id_for_path("notes/a.md")
    with client(emu, delays) as box:
        details = box.call("get_file_details", {"file_id": file_id})
    assert details["id"] == file_id
    assert details["name"] == "a.md"
    assert isinstance(details["parent"]["id"], str)
    assert all(isinstance(e["id"], str) for e in details["path_collection"]["entries"])


@pytest.mark.parametrize("shape", ["structured", "text"])
def test_file_text_comes_back_verbatim(emu, delays, shape):
    emu.configure(shape=shape)
    with client(emu, delays) as box:
        text = box.call_text("get_file_content", {"file_id": emu.fs.id_for_path("notes/b.md")})
        index = box.call_text("get_file_content", {"file_id": emu.fs.id_for_path("memories/_index.json")})
    assert text == "# b.md\nbody of b.md\n"
    assert index == INDEX_TEXT  # a JSON document is not decoded or re-serialised


@pytest.mark.parametrize("ids", ["string", "number"])
def test_409_conflicts_are_parsed(emu, delays, ids):
    emu.configure(ids=ids)
    notes_id = emu.fs.id_for_path("notes")
    with client(emu, delays) as box:
        with pytest.raises(BoxToolError) as upload:
            box.call("upload_file", {"file_name": "a.md", "file_content": "x", "parent_folder_id": notes_id})
        with pytest.raises(BoxToolError) as folder:
            box.call("create_folder", {"name": "notes", "parent_folder_id": "0"})
        assert box.call_count == 2  # a 409 is final, never retried
    assert (upload.value.status, upload.value.box_code) == (409, "item_name_in_use")
    assert conflicts(upload.value.body)[0]["id"] == emu.fs.id_for_path("notes/a.md")
    assert (folder.value.status, folder.value.box_code) == (409, "item_name_in_use")
    assert conflicts(folder.value.body)[0]["id"] == notes_id
    assert "upload_file" in str(upload.value)
    assert upload.value.attempts == 1
    assert delays == []


def test_box_tool_error_counts_attempts(emu, delays):
    """`attempts` > 1 tells a writer that an earlier try may have been applied before it failed."""
    emu.configure(error_rate=1.0, error_kinds=("tool500",))
    with client(emu, delays, max_retries=2) as box, pytest.raises(BoxToolError) as info:
        box.call("who_am_i", {})
    assert (info.value.status, info.value.attempts) == (500, 3)


def test_not_found_is_a_final_box_tool_error(emu, delays):
    with client(emu, delays) as box, pytest.raises(BoxToolError) as info:
        box.call("get_file_details", {"file_id": "999999999"})
    assert info.value.status == 404
    assert delays == []


# --- faults and retries -----------------------------------------------------------------------


@pytest.mark.parametrize("kinds", [("429", "500"), ("tool429", "tool500", "503")])
def test_injected_errors_are_retried(emu, delays, kinds):
    emu.configure(error_rate=0.2, error_kinds=kinds, seed=7)
    file_id = emu.fs.id_for_path("notes/a.md")
    with client(emu, delays) as box:
        for _ in range(20):
            assert box.call("get_file_details", {"file_id": file_id})["id"] == file_id
        assert box.call_count > 20
        assert box.call_count == len(emu.calls)
    assert sum(c.ok for c in emu.calls) == 20
    assert len(delays) == box.call_count - 20
    if "429" in kinds:  # HTTP 429 carries retry-after: 1, which is honoured
        http_429 = sum(c.outcome == "http_429" for c in emu.calls)
        assert delays.count(1.0) >= http_429 > 0


def test_dropped_connections_are_retried(emu, delays):
    emu.configure(drop_rate=0.3, seed=3)
    with client(emu, delays) as box:
        for _ in range(10):
            assert box.call("who_am_i", {})["type"] == "user"
        assert box.call_count > 10
    assert any(c.outcome == "dropped" for c in emu.calls)


def test_persistent_500_gives_up_after_bounded_attempts(emu, delays):
    emu.configure(error_rate=1.0, error_kinds=("500",))
    with client(emu, delays, max_retries=3) as box:
        with pytest.raises(BackendUnavailable, match="500") as info:
            box.call("who_am_i", {})
        assert box.call_count == 4
    assert len(delays) == 3
    assert all(0 <= d <= 10 for d in delays)
    assert info.value.exit_code == 4


def test_server_not_running_fails_fast_on_one_line(delays):
    url = f"http://127.0.0.1:{free_port()}/"
    started = time.monotonic()
    with pytest.raises(BackendUnavailable) as info:
        BoxMCPClient(url, TOKEN, timeout=5.0).open()  # real back-off sleeps, still fast
    message = str(info.value)
    assert message == f"Box MCP server not reachable at {url}: connection refused"
    assert time.monotonic() - started < 3
    assert info.value.exit_code == 4


def test_server_dies_mid_session_and_comes_back(emu, delays):
    with client(emu, delays, max_retries=2) as box:
        assert box.call("who_am_i", {})["type"] == "user"
        emu.stop()
        try:
            with pytest.raises(BackendUnavailable, match=r"not reachable.*connection refused"):
                box.call("who_am_i", {})
        finally:
            emu.start()
        assert box.call("who_am_i", {})["type"] == "user"  # same client, new connection


def test_stateful_session_lost_on_restart_reconnects(emu, delays):
    emu.configure(sessions="stateful")
    emu.stop()
    emu.start()  # the session mode takes effect on start
    try:
        with client(emu, delays) as box:
            assert box.call("who_am_i", {})["type"] == "user"
            emu.stop()
            emu.start()
            assert box.call("who_am_i", {})["type"] == "user"
    finally:
        emu.configure(sessions="stateless")
        emu.stop()
        emu.start()


# --- auth -------------------------------------------------------------------------------------


class Source:
    """A token source whose first token may be stale; counts refreshes."""

    def __init__(self, first: str, fresh: str) -> None:
        self.first, self.fresh, self.refreshes = first, fresh, 0

    def access_token(self) -> str:
        return self.first

    def refresh(self) -> str:
        self.refreshes += 1
        return self.fresh


def test_wrong_token_is_auth_error_without_the_token(emu, delays):
    secret = "wrong-token-SECRET-42"
    with pytest.raises(AuthError) as info:
        client(emu, delays, token=secret).open()
    message = str(info.value)
    assert secret not in message
    assert "401" in message
    assert "box-memory auth login" in message
    assert "\n" not in message
    assert info.value.exit_code == 4


def test_refresh_on_401_then_success(emu, delays):
    emu.set_tokens(["fresh-token-abc123"])
    source = Source("stale-token-xyz789", "fresh-token-abc123")
    with client(emu, delays, token=source) as box:
        assert box.call("who_am_i", {})["type"] == "user"
    assert source.refreshes == 1


def test_refresh_mid_session_when_token_is_revoked(emu, delays):
    source = Source(TOKEN, "rotated-token-77777")
    with client(emu, delays, token=source) as box:
        assert box.call("who_am_i", {})["type"] == "user"
        emu.set_tokens(["rotated-token-77777"])
        results = box.call_many([("who_am_i", {})] * 4, concurrency=4)
        assert all(isinstance(r, dict) for r in results), results
    assert source.refreshes == 1  # concurrent 401s share one refresh (refresh tokens are single use)


def test_second_401_after_refresh_is_auth_error(emu, delays):
    source = Source("stale-token-xyz789", "also-bad-token-456")
    with pytest.raises(AuthError) as info:
        client(emu, delays, token=source).open()
    assert source.refreshes == 1
    assert "also-bad-token-456" not in str(info.value)
    assert "stale-token-xyz789" not in str(info.value)


# --- tools the admin changed, allowlist ---------------------------------------------------------


def test_disabled_tool(emu, delays):
    emu.configure(disabled_tools=("ai_qa_single_file",))
    with client(emu, delays) as box:
        assert box.has_tool("ai_qa_single_file")  # listed, but refused when called
        with pytest.raises(ToolDisabled, match="ai_qa_single_file"):
            box.call("ai_qa_single_file", {"file_id": "1", "question": "why?"})
        assert box.call_count == 1  # not retried
        assert delays == []


def test_hidden_tool_is_missing_and_never_sent(emu, delays):
    emu.configure(hidden_tools=("get_download_url",))
    with client(emu, delays) as box:
        assert not box.has_tool("get_download_url")
        with pytest.raises(ToolMissing, match="get_download_url") as info:
            box.call("get_download_url", {"file_id": "1"})
        assert box.call_count == 0
    assert info.value.exit_code == 4
    assert emu.calls == []


def test_allowlist_refuses_before_sending(emu, delays):
    with client(emu, delays) as box:
        box.allowed_tools = READ_TOOLS
        with pytest.raises(BoxMemoryError, match="upload_file") as info:
            box.call("upload_file", {"file_name": "x.md", "file_content": "x"})
        assert info.value.code == "tool_not_allowed"
        assert box.call("who_am_i", {})["type"] == "user"
        assert box.call_count == 1
    assert [c.name for c in emu.calls] == ["who_am_i"]


# --- concurrency ------------------------------------------------------------------------------


def test_call_many_is_concurrent_and_ordered(emu, delays):
    # Latency large against the client's own CPU cost, so a busy machine cannot hide the overlap.
    emu.configure(latency_ms=200)
    ids = [emu.fs.id_for_path(f"f{i}.txt") for i in range(5)] + [
        emu.fs.id_for_path(f"notes/{n}.md") for n in "abc"
    ]
    calls = [("get_file_details", {"file_id": i}) for i in ids]
    with client(emu, delays) as box:
        started = time.monotonic()
        for name, args in calls:
            box.call(name, args)
        sequential = time.monotonic() - started
        started = time.monotonic()
        results = box.call_many(calls, concurrency=4)
        concurrent = time.monotonic() - started
        assert box.call_count == 16
    assert [r["id"] for r in results] == ids
    assert sequential >= 8 * 0.2
    assert concurrent < sequential * 0.7, (concurrent, sequential)


def test_call_many_returns_errors_as_values(emu, delays):
    emu.configure(hidden_tools=("get_download_url",))
    with client(emu, delays) as box:
        box.allowed_tools = {"who_am_i", "get_file_details", "get_download_url"}
        results = box.call_many(
            [
                ("who_am_i", {}),
                ("get_file_details", {"file_id": "999999999"}),
                ("get_download_url", {"file_id": "1"}),
                ("upload_file", {"file_name": "x", "file_content": "x"}),
            ],
            concurrency=2,
        )
    assert results[0]["type"] == "user"
    assert isinstance(results[1], BoxToolError) and results[1].status == 404
    assert isinstance(results[2], ToolMissing)
    assert isinstance(results[3], BoxMemoryError) and results[3].code == "tool_not_allowed"


# --- mcp_check --------------------------------------------------------------------------------


def test_mcp_check_pass(emu):
    report = mcp_check(emu.url, TOKEN)
    assert report.verdict == "PASS", report.to_dict()
    assert report.reachable and report.auth_ok
    assert report.required_missing == [] and report.optional_missing == []
    assert report.user and report.user.get("id")
    assert json.loads(json.dumps(report.to_dict()))["verdict"] == "PASS"


def test_mcp_check_degraded_and_incompatible(emu):
    emu.configure(hidden_tools=("ai_qa_single_file",))
    report = mcp_check(emu.url, TOKEN)
    assert report.verdict == "DEGRADED"
    assert report.optional_missing == ["ai_qa_single_file"]
    emu.configure(hidden_tools=("upload_file", "get_download_url"))
    report = mcp_check(emu.url, TOKEN)
    assert report.verdict == "INCOMPATIBLE"
    assert report.required_missing == ["upload_file"]
    assert set(report.optional_present) == set(OPTIONAL_TOOLS) - {"get_download_url"}


def test_mcp_check_bad_token_and_unreachable(emu):
    report = mcp_check(emu.url, "bad-token-999999")
    assert (report.verdict, report.reachable, report.auth_ok) == ("INCOMPATIBLE", True, False)
    assert report.error_code == "auth_failed"
    assert "bad-token-999999" not in json.dumps(report.to_dict())
    url = f"http://127.0.0.1:{free_port()}/"
    report = mcp_check(url, TOKEN, sleep=lambda s: None)
    assert (report.verdict, report.reachable) == ("INCOMPATIBLE", False)
    assert "connection refused" in report.error


# --- small pieces -----------------------------------------------------------------------------


def test_redact():
    text = "token abc12345 in\nAuthorization: Bearer eyJhbGciOi.x-y_z and ?access_token=qq11&x=1"
    out = redact(text, "abc12345", None, "")
    assert "abc12345" not in out and "eyJhbGciOi" not in out and "qq11" not in out
    assert "\n" not in out
    assert "x=1" in out


def test_default_url_from_env(monkeypatch):
    monkeypatch.setenv("BOX_MCP_URL", "http://127.0.0.1:1/")
    assert BoxMCPClient(None, TOKEN).url == "http://127.0.0.1:1/"
    monkeypatch.delenv("BOX_MCP_URL")
    assert BoxMCPClient(None, TOKEN).url == "https://mcp.box.com/"


@pytest.mark.parametrize("era", ["legacy", "dual"])
def test_both_protocol_eras(emu, delays, era):
    emu.configure(era=era)
    try:
        with client(emu, delays) as box:
            assert box.protocol_version
            assert box.call("who_am_i", {})["type"] == "user"
    finally:
        emu.configure(era="legacy")


def test_a_server_that_stops_answering_does_not_hang(emu, delays):
    with client(emu, delays, timeout=0.5, max_retries=1) as box:
        emu.configure(latency_ms=3000)
        started = time.monotonic()
        with pytest.raises(BackendUnavailable, match=r"no answer within 0\.5 s"):
            box.call("who_am_i", {})
        assert time.monotonic() - started < 2.5
        assert box.call_count == 2
