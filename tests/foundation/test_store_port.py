"""The Store port is complete: both stores implement all of it, optional capabilities are
protocols, and no code outside `store/` probes a store or names a concrete one."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import box_memory
from box_memory.store import (
    as_box_tools,
    as_metadata_search,
    as_tier_detection,
    close_cloud_sessions,
    open_cloud,
    open_local,
)
from box_memory.store.base import Store

PACKAGE = Path(box_memory.__file__).parent
CONCRETE = ("box_memory.store.local", "box_memory.store.boxmcp", "box_memory.store.cloud")


@pytest.fixture(autouse=True)
def _no_session_left() -> Iterator[None]:
    yield
    close_cloud_sessions()  # the cloud stores here never open a session: nothing is called


def _port_members() -> set[str]:
    names = {
        n
        for n, v in vars(Store).items()
        if not n.startswith("_") and (callable(v) or isinstance(v, property))
    }
    return names | set(Store.__annotations__)


def _implements(store: object, member: str) -> bool:
    """The store's class (or the store) defines `member` itself: the port's own stub, inherited by
    a class that names `Store` as its base, does not count."""
    for klass in type(store).__mro__:
        if klass is Store:
            return False
        if member in vars(klass):
            return True
    return member in vars(store)


def test_both_stores_implement_every_member_of_the_port(tmp_path: Path) -> None:
    local = open_local(tmp_path)
    cloud = open_cloud("123")
    members = _port_members()
    assert {"read_chunks", "prefetch", "batch", "checkpoint", "listing_incomplete", "signature"} <= members
    assert {"lock_state", "local_root", "folder_id", "drop_listings", "close", "complete_config"} <= members
    for store in (local, cloud):
        missing = sorted(m for m in members if not _implements(store, m))
        assert missing == [], f"{type(store).__name__} lacks {missing}"
    assert local.local_root == tmp_path
    assert cloud.local_root is None


def test_close_releases_a_cloud_store_and_is_a_no_op_on_a_local_one(tmp_path: Path) -> None:
    local = open_local(tmp_path)
    local.write_bytes("a.md", b"x")
    local.close()
    local.close()
    assert local.read_bytes("a.md") == b"x"  # nothing was held: the store still answers
    cloud = open_cloud("123")
    cloud.warnings.append("collected before close")
    cloud.close()
    cloud.close()
    assert close_cloud_sessions() == []  # closed on its own: no longer among the open stores


def test_optional_capabilities_are_offered_by_the_cloud_store_only(tmp_path: Path) -> None:
    local, cloud = open_local(tmp_path), open_cloud("123")
    assert (
        as_box_tools(local) is None and as_metadata_search(local) is None and as_tier_detection(local) is None
    )
    assert as_box_tools(cloud) is cloud
    assert as_metadata_search(cloud) is cloud
    assert as_tier_detection(cloud) is cloud


def test_a_capability_is_offered_exactly_where_its_protocol_says(tmp_path: Path) -> None:
    """`offers` (the `as_...` probes) answers what `isinstance` with the runtime-checkable
    protocol answers, for both stores, every capability, and an object with none of them."""
    from box_memory.store.base import (
        BatchReads,
        BoxTools,
        MetadataSearch,
        TierDetection,
        UnlistedReads,
        offers,
    )

    stores = (open_local(tmp_path), open_cloud("123"), object())
    for capability in (BatchReads, BoxTools, MetadataSearch, TierDetection, UnlistedReads):
        for store in stores:
            assert offers(store, capability) == isinstance(store, capability), (capability, store)
    assert offers(stores[0], BatchReads) and offers(stores[1], UnlistedReads)


def test_the_local_store_answers_the_port_without_probing(tmp_path: Path) -> None:
    store = open_local(tmp_path)
    store.write_bytes("a.md", b"x" * 10)
    assert store.prefetch(["a.md"]) == 0
    assert store.listing_incomplete("") is None
    assert store.folder_id("") is None
    assert store.lock_state() is None
    assert b"".join(bytes(c) for c in store.read_chunks("a.md", 4)) == b"x" * 10
    before = store.signature("a.md")
    store.write_bytes("a.md", b"y" * 10)
    assert before is not None and store.signature("a.md") not in (None, before)
    assert store.signature("missing.md") is None
    with store.lock(writer="t", skill="s"):
        held = store.lock_state()
        assert held is not None and held["writer"] == "t" and held["stale"] is False


def _sources() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        out.append((rel, ast.parse(path.read_text(encoding="utf-8"), rel)))
    return out


def _imports(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_nothing_outside_store_imports_a_concrete_store() -> None:
    bad = [
        f"{rel}: {name}"
        for rel, tree in _sources()
        if not rel.startswith("store/")
        for name in _imports(tree)
        if name.startswith(CONCRETE)
    ]
    assert bad == []


def _is_store(node: ast.AST) -> bool:
    """`store`, `ws.store`, `self.store`, `self.workspace.store` ..., also as either branch of
    `a if c else b` (`getattr(ws.store if ws else None, ...)`)."""
    if isinstance(node, ast.IfExp):
        return _is_store(node.body) or _is_store(node.orelse)
    return (isinstance(node, ast.Name) and node.id == "store") or (
        isinstance(node, ast.Attribute) and node.attr == "store"
    )


@pytest.mark.parametrize("what", ["getattr", "hasattr", "kind"])
def test_nothing_outside_store_probes_a_store(what: str) -> None:
    bad: list[str] = []
    for rel, tree in _sources():
        if rel.startswith(("store/", "brain/")):  # brain's `store` is its SQLite store of sources
            continue
        for node in ast.walk(tree):
            if what in ("getattr", "hasattr") and isinstance(node, ast.Call):
                fn = node.func
                if isinstance(fn, ast.Name) and fn.id == what and node.args and _is_store(node.args[0]):
                    bad.append(f"{rel}:{node.lineno}")
            if what == "kind" and isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(
                    isinstance(s, ast.Attribute) and s.attr == "kind" and _is_store(s.value) for s in sides
                ):
                    bad.append(f"{rel}:{node.lineno}")
    assert bad == []


@pytest.mark.parametrize("module", ["store/cloud/lease.py", "store/cloud/provision.py"])
def test_the_lease_and_provisioning_use_the_cloud_store_public_api_only(module: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    private = [
        f"{module}:{node.lineno} .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
    ]
    assert private == []


def test_the_store_package_imports_no_layer_above_it() -> None:
    above = (
        "box_memory.workspace.resolve",
        "box_memory.workspace.index",
        "box_memory.cli",
        "box_memory.serve",
    )
    services = (
        "box_memory.write",
        "box_memory.recall",
        "box_memory.maintenance.regenerate",
    )
    bad = [
        f"{rel}: {name}"
        for rel, tree in _sources()
        if rel.startswith("store/")
        for name in _imports(tree)
        if name.startswith(above + services)
    ]
    assert bad == []


def test_nothing_outside_store_reads_a_store_member_the_port_does_not_declare() -> None:
    """A service reads only what `Store` (or an optional capability, reached through `as_*`)
    declares: `mcp-check` once read the cloud store's own `warnings` list."""
    from box_memory.store import base

    declared = set(base.Store.__annotations__)
    for proto in (
        base.Store,
        base.MetadataSearch,
        base.BoxTools,
        base.TierDetection,
        base.UnlistedReads,
        base.BatchReads,
    ):
        declared |= {n for n in dir(proto) if not n.startswith("__")}
    bad = []
    for rel, tree in _sources():
        if rel.startswith(("store/", "emulator/", "brain/", "cli/brain_cmd")):  # brain's `store`: its db
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or node.attr in declared:
                continue
            v = node.value
            if (isinstance(v, ast.Name) and v.id == "store") or (
                isinstance(v, ast.Attribute) and v.attr == "store"
            ):
                bad.append(f"{rel}:{node.lineno} .{node.attr}")
    assert bad == []
