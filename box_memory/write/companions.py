"""Writing companions: a markdown memory that describes one binary and is pinned to its bytes by
hash. The binary is resolved and hashed before the lock (`prepare_companion`, a frozen value);
the companion placement then finds the existing companion under the lock and commits through the
one locked commit (`write.commit`). Regenerating one supersedes the old companion, which moves to
`_archive/companions/<binary-name>.<old id>.md` so the new one can take the canonical name.
Where companions live, and what is refused: `write.binaries`."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from box_memory.errors import BoxMemoryError, InvalidInput, NotFound
from box_memory.format.ids import new_id, next_free_slug, normalize_tag, slugify, validate_title
from box_memory.format.model import now_iso
from box_memory.format.names import check_path
from box_memory.format.safeio import ReadFailed, UnreadableFile
from box_memory.result import Result
from box_memory.store.base import Entry, as_box_tools, join
from box_memory.workspace.index import FolderIndex, load_all, read_memory
from box_memory.workspace.resolve import Workspace
from box_memory.write.binaries import (
    ARCHIVE_FOLDER,
    Binary,
    Digest,
    archive_path,
    companion_location,
    hash_binary,
    refuse_folder,
    resolve_binary,
    sniff_mime,
    stat_binary,
    type_tag,
)
from box_memory.write.checks import check_content, render_body
from box_memory.write.commit import Located, Supersede, Transaction, check_supersedable, commit
from box_memory.write.companion_state import Companion, companions_for, state_of


@dataclass
class CompanionRequest:
    file: str
    body: str | bytes | None = None
    tags: list[str] = field(default_factory=list)
    team: str | None = None
    force: bool = False
    agent: str | None = None
    cwd: Path | None = None
    extract: bool = False  # fill the fields with Box AI structured extraction (Box workspace with Box AI)


# What `companion --extract` asks Box AI for (the companion template's fields).
EXTRACT_FIELDS: list[dict[str, Any]] = [
    {
        "key": "summary",
        "type": "string",
        "displayName": "Summary",
        "description": "What the file is, briefly",
    },
    {"key": "parties", "type": "string", "displayName": "Parties", "description": "People or organisations"},
    {"key": "dates", "type": "string", "displayName": "Dates", "description": "Dates that matter"},
    {"key": "amounts", "type": "string", "displayName": "Amounts", "description": "Money amounts"},
]
_EXTRACT_TOOLS = ("ai_extract_structured_from_fields", "ai_extract_structured_from_fields_enhanced")


EXTRACT_SETTING = "ai_extract_enabled"


def extract_by_setting(ws: Workspace, req: CompanionRequest) -> bool:
    """`ai_extract_enabled: true` in the workspace settings, no --body and no --extract given,
    on a Box workspace whose tier has Box AI extraction: the write fills its fields through Box
    AI without being asked. Off by default; elsewhere the setting changes nothing."""
    if req.extract or req.body is not None or ws.config.settings.get(EXTRACT_SETTING) is not True:
        return False
    store = as_box_tools(ws.store)
    caps = ws.config.data.get("capabilities") or {}
    if store is None or (isinstance(caps, dict) and caps.get("box_ai_tools_available") is False):
        return False
    return any(store.has_tool(t) for t in _EXTRACT_TOOLS)


def ai_extract(ws: Workspace, file_id: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """(Box AI's structured extraction of the binary, None) or (None, why it was not done).

    Box AI reads the binary itself in Box (structured extraction from fields: DOC1/CHG in
    CONNECTORS.md); the answer is data, kept verbatim, never instructions.
    """
    from box_memory.errors import ToolMissing

    store = as_box_tools(ws.store)
    caps = ws.config.data.get("capabilities") or {}
    if store is None or not file_id:
        return None, "Box AI extraction needs a Box workspace (Box AI reads the file in Box)"
    tool = next((t for t in _EXTRACT_TOOLS if store.has_tool(t)), None)
    if tool is None or (isinstance(caps, dict) and caps.get("box_ai_tools_available") is False):
        return (
            None,
            "Box AI is not available for this workspace (its tier, or the server offers no extraction)",
        )
    try:
        payload = store.call(tool, {"file_ids": [str(file_id)], "fields": EXTRACT_FIELDS})
    except ToolMissing:
        return None, "Box AI is not available for this workspace (the server no longer offers extraction)"
    except BoxMemoryError as e:
        return None, f"Box AI extraction failed ({e})"
    answer = payload.get("answer") if isinstance(payload, dict) else None
    if isinstance(answer, str):
        with contextlib.suppress(ValueError):
            answer = json.loads(answer)
    if not isinstance(answer, dict):
        return None, f"Box AI answered {tool} in a shape box-memory cannot read"
    return {"tool": tool, "answer": answer}, None


def _extracted_section(extracted: dict[str, Any]) -> str:
    raw = json.dumps(extracted["answer"], ensure_ascii=False, indent=2)
    return (
        "## Box AI extraction\n\n"
        f"> Generated by Box AI ({extracted['tool']}) from the file itself; the model's answer, verbatim. "
        "Check it before relying on it.\n\n"
        f"```json\n{raw}\n```\n"
    )


def _human_size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # pragma: no cover


def hash_chain(cf: dict[str, Any], previous: Companion | None) -> str:
    """The `## Hash chain` section: this pin, and the one it replaces."""
    lines = [
        "## Hash chain",
        "",
        f"File reviewed at `sha256:{cf['sha256']}` on `{cf['reviewed_at']}` "
        f"({cf['size_bytes']} bytes; sha1 `{cf['sha1']}`). If the binary's current sha256 differs, "
        "this companion is stale and must be regenerated.",
    ]
    if previous is not None:
        lines += [
            "",
            f"- Supersedes {previous.id}: `{previous.hash_algo}:{previous.pinned}` reviewed at "
            f"`{previous.cf.get('reviewed_at') or previous.meta.get('updated_at')}` "
            f"(archived as `{archive_path(_binary_name(previous), previous.id)}`).",
        ]
    return "\n".join(lines) + "\n"


def skeleton(title: str, cf: dict[str, Any], tags: list[str], previous: Companion | None) -> str:
    """A body for an agent to fill in: the plugin's sections, the hash chain, what was not checked."""
    return "\n".join(
        [
            f"# {title}",
            "",
            f"> Describes `{cf['local_path']}` ({cf['mime_type']}, {_human_size(cf['size_bytes'])}). "
            "Not reviewed yet: fill in the sections below from the file itself.",
            "",
            "## What's in this file",
            "",
            "_To fill in: what the file is, who made it, when and why._",
            "",
            "## Key facts",
            "",
            "- _To fill in._",
            "",
            "## Structure",
            "",
            "- _To fill in: pages, sheets, sections, layers or tracks._",
            "",
            "## Classification / handling notes",
            "",
            "_To fill in: sensitivity, retention, who may see it._",
            "",
            "## Related",
            "",
            hash_chain(cf, previous),
            "## What the agent did NOT verify",
            "",
            "- [ ] Did not open or read the file: this companion was generated from its bytes' hash, "
            "size and type only.",
            "- [ ] Did not check who made the file, or whether it is the authoritative version.",
            "- [ ] Did not check the file for sensitive data (personal data, secrets).",
            "- [ ] Did not compare it with earlier versions of the file.",
            "",
            "---",
            "",
            " ".join(f"#{t}" for t in tags),
            "",
        ]
    )


def _binary_name(c: Companion) -> str:
    fn = c.cf.get("filename")
    if isinstance(fn, str) and fn.strip() and "/" not in fn and "\\" not in fn:
        return fn
    return (c.binary or "binary").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PreparedCompanion:
    """A companion write after every check and the hash, before the lock: the binary, its
    digest and Box file id, where the companion goes, and the body the caller gave (checked once;
    None for the skeleton)."""

    binary: Binary
    digest: Digest
    file_id: str | None
    title: str
    tags: tuple[str, ...]
    mime: str
    folder: str
    filename: str
    body: str | None
    extracted: dict[str, Any] | None
    not_extracted: str | None
    by_setting: bool
    force: bool
    agent: str | None

    @property
    def path(self) -> str:
        return join(self.folder, self.filename)

    def info(self, ws: Workspace) -> dict[str, Any]:
        """What every answer says of the binary."""
        return {
            "binary": self.binary.path,
            "team": ws.team_of(self.binary.team),
            "layout": ws.config.companion_layout,
            "sha256": self.digest.sha256,
            "sha1": self.digest.sha1,
            "size_bytes": self.digest.size,
            "mime_type": self.mime,
            "type": type_tag(self.binary.name, self.mime),
        }


def _hashed(ws: Workspace, binary: Binary) -> tuple[Digest, Entry]:
    """The binary's digest and its entry after hashing; refused if it changed meanwhile."""
    before = stat_binary(ws, binary.path)
    if before is None:
        refuse_folder(ws, binary.path)
        raise NotFound(f"{binary.path} does not exist: a companion needs the binary it describes")
    try:
        digest = hash_binary(ws, binary.path)
    except ReadFailed:
        raise
    except UnreadableFile as e:
        raise InvalidInput(str(e)) from None
    after = stat_binary(ws, binary.path)
    if after is None or (after.size, after.modified) != (before.size, before.modified):
        raise BoxMemoryError(f"{binary.path} changed while it was being hashed; run the command again")
    return digest, after


def prepare_companion(ws: Workspace, req: CompanionRequest) -> PreparedCompanion:
    """Everything checked and the binary hashed before the lock is taken (hashing a large file
    must not hold other writers back)."""
    binary = resolve_binary(ws, req.file, team=req.team, cwd=req.cwd)
    extra_tags = [normalize_tag(t) for t in req.tags]
    title = f"Companion — {binary.name}"
    try:
        validate_title(title)
    except InvalidInput as e:
        raise InvalidInput(f"binary name {binary.name!r} cannot name a companion: {e}") from None
    body = check_content(req.body) if req.body is not None else None
    digest, after = _hashed(ws, binary)
    extracted, not_extracted = ai_extract(ws, after.file_id) if req.extract else (None, None)
    mime = sniff_mime(binary.name, digest.head)
    folder, filename = companion_location(ws, binary)
    check_path(join(folder, filename), "companion")
    return PreparedCompanion(
        binary=binary,
        digest=digest,
        file_id=after.file_id,
        title=title,
        tags=tuple(dict.fromkeys(["companion", type_tag(binary.name, mime), *extra_tags])),
        mime=mime,
        folder=folder,
        filename=filename,
        body=body,
        extracted=extracted,
        not_extracted=not_extracted,
        by_setting=extract_by_setting(ws, req),  # extracted under the lock, once it is not a no-op
        force=req.force,
        agent=req.agent,
    )


@dataclass
class CompanionPlacement:
    """A prepared companion, placed under the lock: the existing companion found again, an
    up-to-date one left untouched (unless forced), else a new one that supersedes it."""

    c: PreparedCompanion

    def place(self, tx: Transaction) -> dict[str, Any]:
        c, ws = self.c, tx.ws
        if c.not_extracted:
            tx.warnings.append(f"{c.not_extracted}; wrote the skeleton")
        idx, _ = tx.folder(c.folder)
        old = self._existing(tx, idx)
        state_before, old_mem = "missing", None
        if old is not None:
            st = state_of(ws, old, c.digest)
            if st["state"] == "current" and not c.force:
                return self._unchanged(ws, old)
            state_before = st["state"]
            old_mem = check_supersedable(read_memory(ws, old.path))
        if ws.store.exists(c.path) and (old is None or old.path != c.path):
            raise BoxMemoryError(
                f"{c.path} already exists and is not the indexed companion of {c.binary.path}; "
                "run `box-memory index-rebuild` or move it aside",
                code="already_exists",
            )
        extracted = c.extracted
        if c.by_setting:
            extracted, failed = ai_extract(ws, c.file_id)
            if extracted is None:
                tx.warnings.append(f"{failed} ({EXTRACT_SETTING} is on); wrote the skeleton")
        taken = {str(e.get("slug")) for e in idx.entries if old is None or e.get("id") != old.id}
        meta = self._meta(ws, next_free_slug(f"{slugify(c.binary.name)}-companion", taken), extracted)
        supersede = None
        if old is not None:
            assert old_mem is not None  # read with `old` above
            meta["supersedes"] = [old.id]
            supersede = Supersede(
                Located(old.entry, old.folder), old_mem, archive_to=archive_path(_binary_name(old), old.id)
            )
            if not ws.store.exists(ARCHIVE_FOLDER):
                ws.store.mkdir(ARCHIVE_FOLDER)
        if not ws.store.exists(c.folder):
            ws.store.mkdir(c.folder)
        done = tx.file(
            idx, meta, self._body(meta["companion_for"], old, extracted), c.filename, old=supersede
        )
        return {
            **c.info(ws),
            "action": "superseded" if old is not None else "created",
            "state_before": state_before,
            "state": "current",
            "id": meta["id"],
            "title": c.title,
            "slug": meta["slug"],
            "path": done.path,
            "folder": c.folder + "/",
            "file_id": done.file_id,
            "supersedes": old.id if old is not None else None,
            "archived": supersede.archive_to if supersede is not None else None,
            "ai_extracted": extracted is not None,
            "extracted": meta["companion_for"].get("extracted"),
            "extracted_by": ("setting" if c.by_setting else "option") if extracted is not None else None,
        }

    def _existing(self, tx: Transaction, idx: FolderIndex) -> Companion | None:
        """The binary's live companion (the newest when there are several, with a warning)."""
        c = self.c
        indexes = [idx if i.folder == c.folder else i for i in load_all(tx.ws)]
        if all(i.folder != c.folder for i in indexes):
            indexes.append(idx)
        existing = companions_for(tx.ws, c.binary.path, indexes)
        if len(existing) > 1:
            tx.warnings.append(
                f"{c.binary.path} has {len(existing)} live companions; "
                f"the newest ({existing[0].id}) is used: " + ", ".join(x.path for x in existing[1:])
            )
        return existing[0] if existing else None

    def _unchanged(self, ws: Workspace, old: Companion) -> dict[str, Any]:
        return {
            **self.c.info(ws),
            "action": "unchanged",
            "state": "current",
            "id": old.id,
            "title": old.meta.get("title"),
            "path": old.path,
            "folder": old.folder + "/",
            "supersedes": None,
            "archived": None,
        }

    def _meta(self, ws: Workspace, slug: str, extracted: dict[str, Any] | None) -> dict[str, Any]:
        c, now = self.c, now_iso()
        cf: dict[str, Any] = {
            "file_id": c.file_id,
            "filename": c.binary.name,
            "local_path": c.binary.path,
            "sha256": c.digest.sha256,
            "hash_algo": "sha256",
            "sha1": c.digest.sha1,
            "size_bytes": c.digest.size,
            "mime_type": c.mime,
            "reviewed_at": now,
            "reviewed_by": c.agent or "box-memory",
        }
        if extracted is not None:
            cf["ai_extracted"] = True
            cf["extracted"] = {
                str(k): v for k, v in extracted["answer"].items() if v not in (None, "", [], {})
            }
        meta: dict[str, Any] = {
            "id": new_id(),
            "slug": slug,
            "title": c.title,
            "kind": "companion",
            "status": "active",
            "team": ws.team_of(c.binary.team),
            "created_at": now,
            "updated_at": now,
        }
        if c.agent:
            meta["agent"] = c.agent
        meta["companion_for"] = cf
        meta["tags"] = list(c.tags)
        return meta

    def _body(self, cf: dict[str, Any], old: Companion | None, extracted: dict[str, Any] | None) -> str:
        """The skeleton, or the caller's body with the hash chain; Box AI's answer in front."""
        c = self.c
        if c.body is None:
            body = skeleton(c.title, cf, list(c.tags), old)
        else:
            body = render_body(c.title, c.body)
            if "## Hash chain" not in body:
                body = body.rstrip("\n") + "\n\n" + hash_chain(cf, old)
        if extracted is None:
            return body
        head, sep, rest = body.partition("\n## ")
        return (
            f"{head}\n{_extracted_section(extracted)}{sep}{rest}"
            if sep
            else body + _extracted_section(extracted)
        )


def write_companion(ws: Workspace, req: CompanionRequest) -> Result:
    """Write (or refresh) FILE's companion; an up-to-date one is returned untouched unless `force`.
    Prepared (checked and hashed) before the lock, placed through the one locked commit."""
    prepared = prepare_companion(ws, req)
    results, warnings = commit(
        ws, [CompanionPlacement(prepared)], writer=req.agent or "box-memory", skill="companion"
    )
    return Result(results[0], warnings=warnings)
