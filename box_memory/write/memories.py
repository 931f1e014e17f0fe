"""Write, supersede and get memories. Append-only: only supersede bookkeeping rewrites a file."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from box_memory.errors import (
    BoxMemoryError,
    DuplicateMemory,
    InvalidInput,
    NotFound,
)
from box_memory.format import frontmatter
from box_memory.format.ids import (
    is_memory_id,
    new_id,
    next_free_slug,
    normalize_tag,
    slugify,
    validate_title,
)
from box_memory.format.model import (
    KINDS,
    WRITABLE_STATUSES,
    check_confidence,
    check_kind,
    check_status,
    index_entry,
    now_iso,
    parse_time,
)
from box_memory.format.names import fit_slug
from box_memory.params import Param
from box_memory.result import Result
from box_memory.store.base import AlreadyExists, join
from box_memory.workspace.index import (
    FolderIndex,
    load_all,
    load_index,
    read_memory,
    refresh_rollup,
    rollup_may_lag,
    save_index,
)
from box_memory.workspace.resolve import Workspace
from box_memory.write.commit import (
    Located,
    Supersede,
    check_content,
    check_supersedable,
    commit_memory,
    copies_warning,
    load_for_write,
    render_body,
    unmerged_copies,
)

MAX_TAG = 100  # characters in one tag
MAX_AGENT = 200  # characters in --agent
_DECISION_RE = re.compile(r"\b(we|i|team)\s+(decided|will use|chose|choose|agreed|are going with)\b", re.I)
_TASK_RE = re.compile(r"(\bTODO\b|\bneed to\b|\bneeds to\b|^\s*[-*] \[ \])", re.I | re.M)
_SOURCE_RE = re.compile(r"^([a-z][a-z0-9_-]{0,31}):(.+)$")
_NAME_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def infer_kind(content: str) -> str:
    """decision / task from clear phrasing, otherwise note (never guess fact/observation/reference)."""
    if _DECISION_RE.search(content):
        return "decision"
    if _TASK_RE.search(content):
        return "task"
    return "note"


def check_agent(agent: str | None) -> str | None:
    """The writer's name: short, one line, no control or bidi characters (it is shown to people)."""
    if agent is None:
        return None
    if len(agent) > MAX_AGENT:
        raise InvalidInput(f"agent name is longer than {MAX_AGENT} characters")
    if _NAME_CONTROL_RE.search(agent):
        raise InvalidInput(f"agent name {agent[:40]!r} contains control or bidi characters")
    if not agent.strip():
        raise InvalidInput("agent name is empty")
    return agent


def check_tag(tag: str) -> str:
    norm = normalize_tag(tag)
    if len(norm) > MAX_TAG:
        raise InvalidInput(f"tag {norm[:40]}... is longer than {MAX_TAG} characters")
    return norm


def parse_source(text: str) -> dict[str, str]:
    m = _SOURCE_RE.match(text.strip())
    if not m or not m.group(2).strip():
        raise InvalidInput(f"invalid --source {text!r}: use TYPE:REF (e.g. url:https://..., box_file:123)")
    return {"type": m.group(1), "ref": m.group(2).strip()}


def parse_related(text: str) -> str:
    t = text.strip()
    inner = t[2:-2] if t.startswith("[[") and t.endswith("]]") else t
    validate_title(inner)
    return f"[[{inner}]]"


def memory_filename(kind: str, slug: str) -> str:
    return f"{kind}__{slug}.md"


INPUT_META_KEYS = (
    "title",
    "kind",
    "status",
    "tags",
    "related",
    "confidence",
    "agent",
    "sources",
    "links",
    "expires_at",
)


def split_input(content: str) -> tuple[dict[str, Any], str]:
    """Content may carry its own frontmatter (an agent piping a whole memory file).

    Its YAML goes through the same safe, bounded loader as files on disk; bookkeeping keys
    (id, slug, created_at, ...) are ignored because a write always makes a new memory.
    """
    if not content.startswith("---"):
        return {}, content
    from box_memory.errors import InvalidFile

    try:
        meta, body = frontmatter.parse(content, "content frontmatter")
    except InvalidFile as e:
        raise InvalidInput(str(e)) from None
    return {k: meta[k] for k in INPUT_META_KEYS if meta.get(k) is not None}, body


@dataclass
class WriteRequest:
    """A write. The fields with a `Param` are the MCP `write` tool's parameters (its schema is
    derived from them); `links` and `extra_meta` are for importers and integrations."""

    content: Annotated[
        str, Param("The memory text (may start with YAML frontmatter carrying its fields).", min_length=1)
    ]
    title: Annotated[
        str | None,
        Param(
            "Title; required unless the content's frontmatter has one or supersedes is given "
            "(a replacement keeps the replaced memory's title, kind, tags, team and related unless set)."
        ),
    ] = None
    kind: Annotated[
        str | None,
        Param(
            "When absent: the replaced memory's kind with supersedes, else inferred as "
            "decision, task or note (never fact/observation/reference).",
            choices=KINDS,
        ),
    ] = None
    tags: Annotated[list[str], Param("Tags (normalised to lowercase-kebab).")] = field(default_factory=list)
    team: Annotated[str | None, Param("Team folder to write into (default team when absent).")] = None
    status: Annotated[
        str, Param("active, or draft for a memory not yet settled.", choices=WRITABLE_STATUSES)
    ] = "active"
    supersedes: Annotated[str | None, Param("Id (mem_...) of the memory this one replaces.")] = None
    related: Annotated[list[str], Param('Related memories as "[[Title]]".')] = field(default_factory=list)
    confidence: Annotated[float | None, Param("How sure the writer is, 0..1.", ge=0, le=1)] = None
    agent: Annotated[str | None, Param("Agent or person writing.")] = None
    sources: Annotated[list[str], Param("Provenance as TYPE:REF.")] = field(default_factory=list)
    new_slug: Annotated[bool, Param("Keep both when a memory with this title exists already.")] = False
    links: list[dict[str, str]] = field(default_factory=list)
    extra_meta: dict[str, Any] = field(default_factory=dict)


def _find_by_id(indexes: list[FolderIndex], mem_id: str) -> Located | None:
    for idx in indexes:
        e = idx.get(mem_id)
        if e is not None:
            return Located(e, idx.folder)
    return None


def _merge_input_meta(req: WriteRequest, given: dict[str, Any]) -> WriteRequest:
    """Flags win over the content's own frontmatter; lists from both are combined."""
    from dataclasses import replace

    def as_list(v: Any, key: str) -> list[Any]:
        if isinstance(v, list):
            return v
        if isinstance(v, (str, dict)):
            return [v]
        raise InvalidInput(f"content frontmatter: '{key}' must be a list")

    def as_str(v: Any, key: str) -> str:
        if not isinstance(v, (str, int, float)) or isinstance(v, bool):
            raise InvalidInput(f"content frontmatter: '{key}' must be text")
        return str(v)

    sources = []
    for s in as_list(given.get("sources", []), "sources"):
        if isinstance(s, dict) and s.get("type") and s.get("ref"):
            sources.append(f"{s['type']}:{s['ref']}")
        else:
            sources.append(as_str(s, "sources"))
    conf = given.get("confidence")
    if conf is not None and (isinstance(conf, bool) or not isinstance(conf, (int, float))):
        raise InvalidInput("content frontmatter: 'confidence' must be a number")
    extra = dict(req.extra_meta)
    if given.get("expires_at") is not None:
        if isinstance(given["expires_at"], (dt.date, dt.datetime)):
            given["expires_at"] = given["expires_at"].isoformat()
        extra["expires_at"] = as_str(given["expires_at"], "expires_at")
        if parse_time(extra["expires_at"]) is None:
            raise InvalidInput(
                f"content frontmatter: 'expires_at' is not an ISO-8601 date ({extra['expires_at'][:40]!r})"
            )
    links = req.links or [
        link
        for link in as_list(given.get("links", []), "links")
        if isinstance(link, dict) and link.get("url")
    ]
    return replace(
        req,
        title=req.title or as_str(given.get("title", ""), "title"),
        kind=req.kind or (as_str(given["kind"], "kind") if "kind" in given else None),
        status=req.status
        if req.status != "active" or "status" not in given
        else as_str(given["status"], "status"),
        tags=[*(as_str(t, "tags") for t in as_list(given.get("tags", []), "tags")), *req.tags],
        related=[*(as_str(r, "related") for r in as_list(given.get("related", []), "related")), *req.related],
        confidence=req.confidence if req.confidence is not None else conf,
        agent=req.agent or (as_str(given["agent"], "agent") if "agent" in given else None),
        sources=[*sources, *req.sources],
        links=links,
        extra_meta=extra,
    )


def _earlier_attempt(
    ws: Workspace,
    idx: FolderIndex,
    same: dict[str, Any] | None,
    filename: str,
    title: str,
    kind: str,
    status: str,
    tags: list[str],
    content: str,
) -> dict[str, Any] | None:
    """The memory an earlier attempt of this very write committed (same title, kind, status, tags
    and body), or None. A memory file missing from the index is added to it (the caller holds the
    lock), so a retry after "saved, but updating the indexes failed" completes that write."""
    path = join(idx.folder, filename)
    if same is not None:
        path = str(same.get("local_path") or join(idx.folder, str(same.get("filename") or filename)))
    elif not ws.store.exists(path):
        return None
    try:
        mem = read_memory(ws, path)
    except BoxMemoryError:
        return None
    if (
        mem.title != title
        or mem.kind != kind
        or mem.status != status
        or list(mem.tags) != tags
        or mem.supersedes
        or mem.body.lstrip("\n") != render_body(title, content).lstrip("\n")
    ):
        return None
    entry = idx.get(mem.id)
    if entry is None or idx.dirty:  # missing from the index, or the index was repaired on load
        if entry is None:
            st = ws.store.stat(path)
            name = path.rsplit("/", 1)[-1]
            size = st.size if st else 0
            idx.upsert(index_entry(mem, filename=name, file_id=st.file_id if st else None, size_bytes=size))
        save_index(ws, idx)
        if not rollup_may_lag(ws):
            refresh_rollup(ws, {idx.folder: idx})
    return {
        "id": mem.id,
        "slug": mem.slug,
        "title": mem.title,
        "kind": mem.kind,
        "status": mem.status,
        "file": path,
        "file_id": entry.get("file_id") if entry else None,
        "supersedes": None,
        "already_written": True,
    }


def _earlier_supersede(
    ws: Workspace,
    idx: FolderIndex,
    old: Supersede,
    kind: str,
    base: str,
    title: str,
    status: str,
    tags: list[str],
    content: str,
) -> dict[str, Any] | None:
    """The memory an earlier attempt of this very supersede committed, or None: the successor the
    old memory already names, or a file of this slug that no index lists, that supersedes the old
    memory with the same title, kind, status, tags and body (the write's drift repair may have
    indexed it already). What that attempt left undone (the old memory marked superseded, index
    entries, rollup) is finished here (the caller holds the lock), as `index-rebuild` would."""
    from box_memory.recall.cache import after_write, before_write

    successor = old.mem.superseded_by if old.mem.status == "superseded" else None
    stem = memory_filename(kind, base)[:-3].casefold()
    by_name = {str(e.get("filename") or "").casefold(): e for e in idx.entries}
    want = render_body(title, content).lstrip("\n")
    for name in sorted(ws.store.list_names(idx.folder)):
        low = name.casefold()
        if not (low == stem + ".md" or (low.startswith(stem + "-") and low[len(stem) + 1 : -3].isdigit())):
            continue
        if not low.endswith(".md"):
            continue
        listed = by_name.get(low)
        if listed is not None and successor is not None and listed.get("id") != successor:
            continue  # another memory of that slug
        path = join(idx.folder, name)
        try:
            mem = read_memory(ws, path)
        except BoxMemoryError:
            continue
        if (
            (successor is not None and mem.id != successor)
            or mem.supersedes != [old.mem.id]
            or mem.title != title
            or mem.kind != kind
            or mem.status != status
            or list(mem.tags) != tags
            or mem.body.lstrip("\n") != want
        ):
            continue
        changed: dict[str, FolderIndex] = {idx.folder: idx}
        old_idx = idx if old.located.folder == idx.folder else load_index(ws, old.located.folder)
        before = before_write(ws, {idx.folder: idx, old_idx.folder: old_idx})
        entry = idx.get(mem.id)
        if entry is None:
            st = ws.store.stat(path)
            entry = index_entry(
                mem, filename=name, file_id=st.file_id if st else None, size_bytes=st.size if st else 0
            )
            idx.upsert(entry)
        old_file_id: str | None = None
        old_size: int | None = None
        if old.mem.status != "superseded":
            old.mem.meta["status"] = "superseded"
            old.mem.meta["superseded_by"] = mem.id
            old.mem.meta["updated_at"] = mem.meta.get("updated_at") or now_iso()
            frontmatter.drop_alias(old.mem.meta, mem.title)
            old_raw = frontmatter.render(old.mem.meta, old.mem.body).encode("utf-8")
            old_file_id = ws.store.write_bytes(old.located.path, old_raw)
            old_size = len(old_raw)
        old_entry = old_idx.get(old.mem.id)
        if old_entry is not None and (old_size is not None or old_entry.get("status") != "superseded"):
            if old_size is None:
                st = ws.store.stat(old.located.path)
                old_size = st.size if st else int(old_entry.get("size_bytes") or 0)
            old_idx.upsert(
                index_entry(
                    old.mem,
                    filename=str(old_entry.get("filename") or old.located.path.rsplit("/", 1)[-1]),
                    file_id=old_file_id or old_entry.get("file_id"),
                    size_bytes=old_size,
                )
            )
            changed[old_idx.folder] = old_idx
        if listed is None or len(changed) > 1 or old_size is not None or idx.dirty:
            for folder_idx in changed.values():
                save_index(ws, folder_idx)
            if not rollup_may_lag(ws):
                refresh_rollup(ws, changed)
            after_write(ws, before, changed, {mem.id, old.mem.id})
        return {
            "id": mem.id,
            "slug": mem.slug,
            "title": mem.title,
            "kind": mem.kind,
            "status": mem.status,
            "file": path,
            "file_id": entry.get("file_id"),
            "supersedes": old.mem.id,
            "already_written": True,
        }
    return None


@dataclass
class Prepared:
    """A write request after validation, before the lock (what `write` and `import` share).

    `title` may be empty and `kind` None when the request supersedes a memory: both are then
    inherited from it under the lock, as are tags, related and the team folder."""

    req: WriteRequest
    content: str
    title: str
    kind: str | None
    status: str
    tags: list[str]
    related: list[str]
    sources: list[dict[str, Any]]
    confidence: float | None
    team: str | None
    folder: str  # the folder it goes to unless the superseded memory's team decides otherwise


def prepare_write(ws: Workspace, req: WriteRequest) -> Prepared:
    """Every check a write makes before touching the workspace; raises InvalidInput and kin."""
    content = check_content(req.content)
    given, content = split_input(content)
    if given:
        req = _merge_input_meta(req, given)
        content = check_content(content)
    asked = req.title or ""
    if not asked.strip() and not req.supersedes:
        raise InvalidInput("--title is required")
    title = validate_title(asked) if asked.strip() else ""
    kind = check_kind(req.kind) if req.kind else None
    # An archived memory is written only as the successor of the one it retires (Box Brain review).
    status = check_status(req.status, WRITABLE_STATUSES + (("archived",) if req.supersedes else ()))
    tags = list(dict.fromkeys(check_tag(t) for t in req.tags))
    check_agent(req.agent)
    related = [parse_related(r) for r in req.related]
    sources: list[dict[str, Any]] = [parse_source(s) for s in req.sources]
    confidence = check_confidence(req.confidence)
    team = ws.require_team(req.team)
    if req.supersedes is not None and not is_memory_id(req.supersedes):
        raise InvalidInput(f"--supersedes needs a memory id (mem_...), got {req.supersedes!r}")
    folder = ws.memories_folder(team)
    return Prepared(req, content, title, kind, status, tags, related, sources, confidence, team, folder)


@dataclass
class FolderSlots:
    """Slugs taken in one folder (index entries), file names on disk, and entries by slug.

    Built once per folder under the lock; a batch keeps it current as it writes, so each write
    does not re-list the folder or scan every entry. A file on disk that the index does not know
    takes only its file name, not the slug: the memory keeps the slug it was asked for and its
    file takes the next free suffix (the plugin's "slug stable"; Box answers such a clash 409).
    """

    taken: set[str]
    by_slug: dict[str, dict[str, Any]]
    copies: list[str] = field(default_factory=list)  # sync conflict copies the index does not hold
    names: set[str] = field(default_factory=set)  # case-folded: Box, macOS and Windows fold case

    @classmethod
    def scan(cls, ws: Workspace, idx: FolderIndex) -> FolderSlots:
        listed = ws.store.list_names(idx.folder)
        taken = {str(e.get("slug")).casefold() for e in idx.entries}
        names = {name.casefold() for name in listed}
        names |= {str(e.get("filename")).casefold() for e in idx.entries if e.get("filename")}
        by_slug: dict[str, dict[str, Any]] = {}
        for e in idx.entries:
            by_slug.setdefault(str(e.get("slug")), e)
        return cls(taken, by_slug, copies=unmerged_copies(idx, listed), names=names)

    def free_name(self, kind: str, slug: str) -> str:
        """`<kind>__<slug>.md`, or with the next free -2, -3 ... when a file holds that name."""
        name, n = memory_filename(kind, slug), 1
        while name.casefold() in self.names:
            n += 1
            name = memory_filename(kind, f"{slug}-{n}")
        return name


OpenIndexes = dict[str, tuple[FolderIndex, FolderSlots]]


def _commit_prepared(
    ws: Workspace,
    p: Prepared,
    open_idx: OpenIndexes,
    warnings: list[str],
    *,
    save: bool = True,
) -> dict[str, Any]:
    """The locked half of a write: supersede lookup and inheritance, duplicate check, slug, file,
    index entry. `open_idx` holds the folder indexes already loaded under this lock (a batch
    keeps them between writes; a single write starts with none)."""
    req, title, kind, tags, related, team = p.req, p.title, p.kind, list(p.tags), list(p.related), p.team
    old: Supersede | None = None
    inherited: list[str] = []
    kind_changed_from: str | None = None
    if req.supersedes:
        found = next(
            (hit for i, _ in open_idx.values() if (hit := _find_by_id([i], req.supersedes)) is not None), None
        ) or _find_by_id([i for i in load_all(ws) if i.folder not in open_idx], req.supersedes)
        if found is None:
            raise NotFound(f"memory {req.supersedes} (to supersede) not found")
        prev_mem = read_memory(ws, found.path)
        if not (save and prev_mem.status == "superseded"):  # else: perhaps this write, retried
            check_supersedable(prev_mem)
        old = Supersede(found, prev_mem)
        # A replacement keeps what it replaces unless the caller says otherwise.
        prev = old.mem
        if not title:
            title = validate_title(prev.title)
            inherited.append("title")
        if kind is None and prev.kind in KINDS:
            kind = prev.kind
            inherited.append("kind")
        elif kind is not None and prev.kind and kind != prev.kind:
            kind_changed_from = prev.kind
        if not tags and prev.tags:
            tags = list(prev.tags)
            inherited.append("tags")
        prev_related = prev.meta.get("related") or []
        if not related and prev_related:
            as_list = prev_related if isinstance(prev_related, list) else [prev_related]
            related = [str(r) for r in as_list]
            inherited.append("related")
        if req.team is None and found.folder.startswith("teams/"):
            team = ws.require_team(found.folder.split("/")[1])
            inherited.append("team")
    if kind is None:
        kind = infer_kind(p.content)
    folder = ws.memories_folder(team)
    if folder not in open_idx:
        loaded = load_for_write(ws, folder, warnings)
        open_idx[folder] = (loaded, FolderSlots.scan(ws, loaded))
        if copies := open_idx[folder][1].copies:
            warnings.append(copies_warning(folder, copies))
    idx, slots = open_idx[folder]
    if old is not None and old.located.folder == folder:
        old.located = _find_by_id([idx], old.mem.id) or old.located

    base = fit_slug(slugify(title), folder, kind)  # the path fits 260 characters (names.fit_slug)
    taken = slots.taken
    same = slots.by_slug.get(base)
    if save and old is not None:
        # A retry of a supersede whose new memory landed (its bookkeeping perhaps not): done.
        prior = _earlier_supersede(ws, idx, old, kind, base, title, p.status, tags, p.content)
        if prior is not None:
            return {**prior, "team": ws.team_of(team), "folder": folder + "/"}
        check_supersedable(old.mem)
    if save and not req.supersedes and not req.new_slug:
        # A retry of a write whose memory landed (its index perhaps not): done, not a duplicate.
        prior = _earlier_attempt(
            ws, idx, same, memory_filename(kind, base), title, kind, p.status, tags, p.content
        )
        if prior is not None:
            return {**prior, "team": ws.team_of(team), "folder": folder + "/"}
    if (
        same is not None
        and str(same.get("title", "")).casefold() == title.casefold()
        and not req.new_slug
        and not (req.supersedes and same.get("id") == req.supersedes)
        and same.get("status") not in ("superseded", "archived")
    ):
        raise DuplicateMemory(
            f"a memory titled {title!r} already exists ({same.get('id')}); "
            "pass --supersedes ID to replace it or --new-slug to keep both"
        )
    slug = next_free_slug(base, taken)

    now = now_iso()
    meta: dict[str, Any] = {
        "id": new_id(),
        "slug": slug,
        "title": title,
        "kind": kind,
        "status": p.status,
        "team": ws.team_of(team),
        "created_at": now,
        "updated_at": now,
    }
    if req.agent:
        meta["agent"] = req.agent
    if p.confidence is not None:
        meta["confidence"] = p.confidence
    if tags:
        meta["tags"] = tags
    if related:
        meta["related"] = related
    if req.links:
        meta["links"] = req.links
    if p.sources:
        meta["sources"] = p.sources
    if req.supersedes:
        meta["supersedes"] = [req.supersedes]
    meta.update(req.extra_meta)
    mem_id = str(meta["id"])
    final_kind = kind

    attempt = [slots.free_name(kind, slug)]

    def next_name(m: dict[str, Any]) -> str:
        # A file that is not in the index holds that name (Box answers 409 Conflict; locally the
        # file exists): never overwrite it. The memory keeps the slug and title it was asked for
        # (the plugin's "slug stable"); only its file name takes the next free suffix, and the
        # index maps the slug to that file.
        slots.names.add(attempt[0].casefold())
        if len(slots.names) > 100_000 + len(idx.entries):
            raise AlreadyExists(f"no free file name for {m['slug']!r} in {folder}/")
        attempt[0] = slots.free_name(final_kind, str(m["slug"]))
        return attempt[0]

    body = render_body(title, p.content)
    # A batch defers index saves, except when the superseded memory sits in another folder.
    save = save or (old is not None and old.located.folder != folder)
    done = commit_memory(ws, idx, meta, body, attempt[0], old=old, rename=next_name, save=save)
    warnings += done.warnings
    slug = str(meta["slug"])
    taken.add(slug)
    slots.names.add(done.filename.casefold())
    if idx.entries and idx.entries[-1].get("id") == mem_id:
        slots.by_slug.setdefault(slug, idx.entries[-1])
    if old is not None and old.located.folder == folder:
        entry = idx.get(old.mem.id)
        if entry is not None and slots.by_slug.get(old.mem.slug, {}).get("id") == old.mem.id:
            slots.by_slug[old.mem.slug] = entry
    return {
        "id": mem_id,
        "slug": slug,
        "title": title,
        "kind": kind,
        "status": str(meta["status"]),
        "team": ws.team_of(team),
        "file": done.path,
        "folder": folder + "/",
        "file_id": done.file_id,
        "supersedes": req.supersedes,
        **({"inherited": inherited} if inherited else {}),
        **({"kind_changed_from": kind_changed_from} if kind_changed_from else {}),
    }


def write_memory(ws: Workspace, req: WriteRequest) -> Result:
    """Validate everything first, then under the lock: memory file, superseded file, indexes, rollup."""
    p = prepare_write(ws, req)
    warnings: list[str] = []
    with ws.store.lock(writer=req.agent or "box-memory", skill="write"):
        data = _commit_prepared(ws, p, {}, warnings)
    return Result(data, warnings=warnings)


BATCH_SAVE_EVERY = 2000  # a long batch saves its indexes this often (index-rebuild covers a crash)


def write_many(
    ws: Workspace,
    items: list[Prepared],
    *,
    writer: str = "box-memory",
    skill: str = "import",
    on_item: Callable[[int, dict[str, Any] | None, BoxMemoryError | None], None] | None = None,
) -> list[str]:
    """Write prepared requests in order under one lock: the same commit as `write_memory`, but
    each folder index is loaded once and saved every BATCH_SAVE_EVERY writes and at the end
    (rollup likewise). `on_item(i, result, error)` is told of each; an item's error skips only
    that item. Returns the batch's warnings."""

    warnings: list[str] = []
    if not items:
        return warnings
    # batch(): on a local folder one sync per checkpoint, not 2 per file
    with ws.store.lock(writer=writer, skill=skill), ws.store.batch():
        open_idx: OpenIndexes = {}
        pending = 0

        def flush() -> None:
            ws.store.checkpoint()  # the files first, then the indexes that list them
            for folder_idx, _ in open_idx.values():
                save_index(ws, folder_idx)
            if open_idx and not rollup_may_lag(ws):
                refresh_rollup(ws, {f: i for f, (i, _) in open_idx.items()})

        try:
            for i, p in enumerate(items):
                save_now = False
                if p.req.supersedes:
                    # The superseded memory decides the folder (its team) unless one is given; when
                    # it is not in that folder's open index, write this one as a plain write does.
                    holder = next((f for f, (x, _) in open_idx.items() if x.get(p.req.supersedes)), None)
                    target = holder if holder is not None and p.req.team is None else p.folder
                    if holder is None or holder != target:
                        flush()
                        open_idx = {}
                        save_now = True
                try:
                    res = _commit_prepared(ws, p, open_idx, warnings, save=save_now)
                except BoxMemoryError as e:
                    if on_item is not None:
                        on_item(i, None, e)
                    continue
                pending += 1
                if on_item is not None:
                    on_item(i, res, None)
                if pending >= BATCH_SAVE_EVERY:
                    flush()
                    pending = 0
        finally:
            flush()
    return warnings


# --- lookup ---------------------------------------------------------------------------------


ARCHIVED_COMPANIONS = "_archive/companions"


def archived_companions(ws: Workspace) -> dict[str, str]:
    """Superseded companions moved aside (`<binary>.<id>.md`): id -> path. They are kept, not
    indexed, so `get` and `--history` look here for ids the indexes do not know."""
    out: dict[str, str] = {}
    for name in ws.store.list_names(ARCHIVED_COMPANIONS):
        stem = name[:-3] if name.endswith(".md") else ""
        mem_id = stem.rsplit(".", 1)[-1] if "." in stem else ""
        if is_memory_id(mem_id):
            out[mem_id] = join(ARCHIVED_COMPANIONS, name)
    return out


def _archived_links(ws: Workspace, archive: dict[str, str]) -> dict[str, dict[str, Any]]:
    """History rows for archived memories, keyed by id (read only when a history needs them)."""
    rows: dict[str, dict[str, Any]] = {}
    for mem_id, path in archive.items():
        try:
            m = read_memory(ws, path)
        except BoxMemoryError:
            continue
        rows[mem_id] = {
            **{k: m.meta.get(k) for k in ("id", "title", "slug", "status", "created_at", "updated_at")},
            "superseded_by": m.superseded_by,
            "local_path": path,
        }
    return rows


@dataclass
class GetRequest:
    """The MCP `get` tool's parameters."""

    ref: Annotated[str, Param("Memory id, [[Title]], slug or Box file id.", min_length=1)]
    history: Annotated[bool, Param("Also return the whole supersede chain.")] = False


def get_memory(ws: Workspace, ref: str, *, history: bool = False) -> Result:
    """One memory read from its file, found through the recall cache (see `recall.lookup`); a
    superseded one is returned with a warning naming the current memory."""
    from box_memory.recall.service import lookup

    archive: dict[str, str] = {}
    links: list[dict[str, Any]] = []
    warnings: list[str] = []
    try:
        loc_path, links, warnings = lookup(ws, ref)
    except NotFound:
        archive = archived_companions(ws) if is_memory_id(ref.strip()) else {}
        if ref.strip() not in archive:
            raise
        loc_path = archive[ref.strip()]
    mem = read_memory(ws, loc_path)
    result: dict[str, Any] = {
        "id": mem.id,
        "path": loc_path,
        "frontmatter": mem.meta,
        "body": mem.body,
    }
    if loc_path.startswith(ARCHIVED_COMPANIONS + "/"):
        result["archived"] = True
        if mem.superseded_by:  # the chain continues in the indexes
            try:
                links = lookup(ws, mem.superseded_by)[1]
            except NotFound:
                links = []
    if history:
        # Superseded companions live in the archive, not the indexes: put them in front.
        archive = archive or archived_companions(ws)
        rows = _archived_links(ws, archive) if archive else {}
        back = {str(r["superseded_by"]): i for i, r in rows.items() if r.get("superseded_by")}
        prefix: list[dict[str, Any]] = []
        head = links[0]["id"] if links else mem.id
        while head in back and back[head] not in {x["id"] for x in prefix}:
            head = back[head]
            prefix.insert(0, rows[head])
        links = prefix + links
    current = links[-1] if links else None
    if current is not None and current["id"] != mem.id:
        result["current_id"] = current["id"]
    if history:
        # Each member's own creation time: supersede bookkeeping rewrites `updated_at`.
        for link in links:
            if "created_at" not in link:
                try:
                    link["created_at"] = read_memory(ws, str(link["local_path"])).meta.get("created_at")
                except BoxMemoryError:
                    link["created_at"] = None
        result["history"] = links
    if mem.kind == "companion" and not result.get("archived"):
        from box_memory.write.companions import companion_states, stale_warning

        state = companion_states(ws, [loc_path]).get(loc_path)
        if state is not None:
            result["stale"] = state == "stale"
            result["companion_state"] = state
            if state != "current":
                warnings = [*warnings, stale_warning(mem.title, state)]
    if result.get("current_id"):
        warnings = [*warnings, f"memory {mem.id} is superseded; the current memory is {result['current_id']}"]
    return Result(result, warnings=warnings)
