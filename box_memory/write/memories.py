"""Writing and superseding memories: the memory placement (what a write decides under the lock:
the memory it replaces and what it inherits, duplicates, retries, slug and file name) and"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from box_memory.errors import DuplicateMemory, NotFound
from box_memory.format.ids import new_id, slugify, validate_title
from box_memory.format.model import KINDS, Memory, now_iso
from box_memory.format.names import fit_slug
from box_memory.result import Result
from box_memory.store.base import AlreadyExists
from box_memory.workspace.index import FolderIndex, load_all, read_memory
from box_memory.workspace.resolve import Workspace
from box_memory.write.checks import infer_kind, memory_filename, render_body
from box_memory.write.commit import (
    Committed,
    FolderSlots,
    Located,
    Supersede,
    Transaction,
    check_supersedable,
    commit,
)
from box_memory.write.prepare import Prepared, WriteRequest, prepare_write
from box_memory.write.retries import Same, earlier_attempt, earlier_supersede

__all__ = ["MemoryPlacement", "write_memory"]


def _find_by_id(indexes: list[FolderIndex], mem_id: str) -> Located | None:
    for idx in indexes:
        e = idx.get(mem_id)
        if e is not None:
            return Located(e, idx.folder)
    return None


@dataclass
class Draft:
    """The memory being written, as the lock finds it: the request's fields, plus what a
    replacement keeps from the memory it replaces."""

    title: str
    kind: str | None
    tags: list[str]
    related: list[str]
    team: str | None
    inherited: list[str] = field(default_factory=list)
    kind_changed_from: str | None = None

    def inherit(self, ws: Workspace, prev: Located, mem: Memory, team_given: bool) -> None:
        """A replacement keeps what it replaces unless the caller says otherwise."""
        if not self.title:
            self.title = validate_title(mem.title)
            self.inherited.append("title")
        if self.kind is None and mem.kind in KINDS:
            self.kind = mem.kind
            self.inherited.append("kind")
        elif self.kind is not None and mem.kind and self.kind != mem.kind:
            self.kind_changed_from = mem.kind
        if not self.tags and mem.tags:
            self.tags = list(mem.tags)
            self.inherited.append("tags")
        prev_related = mem.meta.get("related") or []
        if not self.related and prev_related:
            as_list = prev_related if isinstance(prev_related, list) else [prev_related]
            self.related = [str(r) for r in as_list]
            self.inherited.append("related")
        if not team_given and prev.folder.startswith("teams/"):
            self.team = ws.require_team(prev.folder.split("/")[1])
            self.inherited.append("team")


@dataclass
class MemoryPlacement:
    """A prepared memory write, placed under the lock. A write saved at once (a command's own, or
    a batch's supersede outside its open indexes) first looks for an earlier attempt of itself."""

    p: Prepared

    def place(self, tx: Transaction) -> dict[str, Any]:
        p, ws = self.p, tx.ws
        draft = Draft(p.title, p.kind, list(p.tags), list(p.related), p.team)
        single = not tx.batch or self._needs_own_save(tx)
        old = self._superseded(tx, draft, single) if p.supersedes else None
        kind = draft.kind = draft.kind or infer_kind(p.content)
        folder = ws.write_folder(draft.team)  # this month's folder under the "monthly" layout
        if folder not in tx.open and folder != ws.memories_folder(draft.team) and not ws.store.exists(folder):
            ws.store.mkdir(folder)  # the first memory of a month: under the lock, before its index
        idx, slots = tx.folder(folder)
        if old is not None and old.located.folder == folder:
            old.located = _find_by_id([idx], old.mem.id) or old.located
        base = fit_slug(slugify(draft.title), folder, kind)  # the path fits 260 characters (names.fit_slug)
        if single:
            prior = self._earlier(ws, idx, slots, old, base, draft)
            if prior is not None:
                return {**prior, "team": ws.team_of(draft.team), "folder": folder + "/"}
        self._refuse_duplicate(slots, base, draft.title)
        meta = self._meta(ws, draft, slots.free_slug(base))
        # A batch defers index saves, except when the superseded memory sits in another folder.
        save = single or (old is not None and old.located.folder != folder)
        done = self._commit(tx, idx, slots, meta, old, save, draft)
        return self._report(ws, meta, draft, folder, done.path, done.file_id)

    def _needs_own_save(self, tx: Transaction) -> bool:
        """In a batch, a supersede whose memory no open index holds (or that goes to another team)
        saves the batch first and is written as a single write is."""
        if not self.p.supersedes:
            return False
        holder = tx.holder(self.p.supersedes)
        target = holder if holder is not None and not self.p.team_given else self.p.folder
        if holder is not None and holder == target:
            return False
        tx.restart()
        return True

    def _superseded(self, tx: Transaction, draft: Draft, single: bool) -> Supersede:
        ws, mem_id = tx.ws, str(self.p.supersedes)
        found = next(
            (hit for i, _ in tx.open.values() if (hit := _find_by_id([i], mem_id)) is not None), None
        ) or _find_by_id([i for i in load_all(ws) if i.folder not in tx.open], mem_id)
        if found is None:
            raise NotFound(f"memory {mem_id} (to supersede) not found")
        prev = read_memory(ws, found.path)
        if not (single and prev.status == "superseded"):  # else: perhaps this write, retried
            check_supersedable(prev)
        draft.inherit(ws, found, prev, self.p.team_given)
        return Supersede(found, prev)

    def _earlier(
        self, ws: Workspace, idx: FolderIndex, slots: FolderSlots, old: Supersede | None, base: str, d: Draft
    ) -> dict[str, Any] | None:
        """A retry of this write whose memory landed (its bookkeeping perhaps not): done."""
        same = Same(d.title, str(d.kind), self.p.status, tuple(d.tags), self.p.content)
        if old is not None:
            prior = earlier_supersede(ws, idx, old, base, same)
            if prior is None:
                check_supersedable(old.mem)
            return prior
        if self.p.new_slug:
            return None
        return earlier_attempt(ws, idx, slots.first(base), memory_filename(str(d.kind), base), same)

    def _refuse_duplicate(self, slots: FolderSlots, base: str, title: str) -> None:
        same = slots.first(base)
        if (
            same is not None
            and str(same.get("title", "")).casefold() == title.casefold()
            and not self.p.new_slug
            and not (self.p.supersedes and same.get("id") == self.p.supersedes)
            and same.get("status") not in ("superseded", "archived")
        ):
            raise DuplicateMemory(
                f"a memory titled {title!r} already exists ({same.get('id')}); "
                "pass --supersedes ID to replace it or --new-slug to keep both"
            )

    def _meta(self, ws: Workspace, d: Draft, slug: str) -> dict[str, Any]:
        p, now = self.p, now_iso()
        meta: dict[str, Any] = {
            "id": new_id(),
            "slug": slug,
            "title": d.title,
            "kind": d.kind,
            "status": p.status,
            "team": ws.team_of(d.team),
            "created_at": now,
            "updated_at": now,
        }
        optional = {
            "agent": p.agent,
            "confidence": p.confidence,
            "tags": d.tags,
            "related": d.related,
            "links": list(p.links),
            "sources": list(p.sources),
            "supersedes": [p.supersedes] if p.supersedes else None,
        }
        meta.update({k: v for k, v in optional.items() if v not in (None, [])})
        meta.update(dict(p.extra_meta))
        return meta

    def _commit(
        self,
        tx: Transaction,
        idx: FolderIndex,
        slots: FolderSlots,
        meta: dict[str, Any],
        old: Supersede | None,
        save: bool,
        d: Draft,
    ) -> Committed:
        kind, folder, mem_id = str(d.kind), idx.folder, str(meta["id"])
        attempt = [slots.free_name(kind, str(meta["slug"]))]

        def next_name(m: dict[str, Any]) -> str:
            # A file that is not in the index holds that name (Box answers 409 Conflict; locally
            # the file exists): never overwrite it. The memory keeps the slug and title it was
            # asked for (the plugin's "slug stable"); only its file name takes the next free
            # suffix, and the index maps the slug to that file.
            slots.names.add(attempt[0].casefold())
            if len(slots.names) > 100_000 + idx.count():
                raise AlreadyExists(f"no free file name for {m['slug']!r} in {folder}/")
            attempt[0] = slots.free_name(kind, str(m["slug"]))
            return attempt[0]

        done = tx.file(
            idx, meta, render_body(d.title, self.p.content), attempt[0], old=old, rename=next_name, save=save
        )
        slug = str(meta["slug"])
        slots.names.add(done.filename.casefold())
        if idx.raw() is not None:
            slots.added(slug, None)  # entries unparsed: only the slug is recorded
        elif idx.entries and idx.entries[-1].get("id") == mem_id:
            slots.added(slug, idx.entries[-1])
        if old is not None and old.located.folder == folder:
            entry = idx.get(old.mem.id)
            if entry is not None and slots.by_slug.get(old.mem.slug, {}).get("id") == old.mem.id:
                slots.by_slug[old.mem.slug] = entry
        return done

    def _report(
        self, ws: Workspace, meta: dict[str, Any], d: Draft, folder: str, path: str, file_id: str | None
    ) -> dict[str, Any]:
        return {
            "id": str(meta["id"]),
            "slug": str(meta["slug"]),
            "title": d.title,
            "kind": d.kind,
            "status": str(meta["status"]),
            "team": ws.team_of(d.team),
            "file": path,
            "folder": folder + "/",
            "file_id": file_id,
            "supersedes": self.p.supersedes,
            **({"inherited": d.inherited} if d.inherited else {}),
            **({"kind_changed_from": d.kind_changed_from} if d.kind_changed_from else {}),
        }


def write_memory(ws: Workspace, req: WriteRequest) -> Result:
    """Validate everything first, then under the lock: memory file, superseded file, indexes, rollup."""
    p = prepare_write(ws, req)
    results, warnings = commit(ws, [MemoryPlacement(p)], writer=req.agent or "box-memory", skill="write")
    return Result(results[0], warnings=warnings)
