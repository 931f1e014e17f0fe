"""Names that must survive Box Drive on macOS and Windows, and how names from disk are compared.

A workspace lives in a Box Drive folder, so every name box-memory creates there, and every name a
user chooses for something that must reach Box (a team, a binary given a companion), follows
three sets of rules:

- Box Drive skips some files and never uploads them. Box's support article "File Types Ignored
  or Blocked by Box Sync and Box Drive"
  (https://support.box.com/hc/en-us/articles/360044195433) lists: temporary files (`.tmp`, names
  starting with `~`), backups (`.bak`), hidden and system files (every name starting with `.`,
  `desktop.ini`, `thumbs.db`), shortcuts (`.lnk`), web documents (`.gdoc`, `.gsheet`), `.qbi`,
  names of exactly 8 uppercase hex digits with no extension, hard links and symbolic links, names
  with special characters, and the blocked types `.pst .qbw .nd .qbw.tlg .tlg .des .qba .qba.tlg
  .qbr .qby .qdt .pdx`. Box's own temp files (`.bm-tmp-*`) are hidden on purpose: they must never
  sync, and they are only ever renamed into place within their own folder.
- Windows cannot hold reserved device names (`con`, `prn`, `aux`, `nul`, `com1`..`com9`,
  `lpt1`..`lpt9`, in any case and with any extension), names ending in a dot or a space, or the
  characters `<>:"|?*` and control characters; the article's "special characters" are these.
- Paths are at most MAX_PATH (260) characters from the workspace root. Memory slugs are cut so
  that `<folder>/<kind>__<slug>-<n>.md` fits (with room for a `-NNN` collision suffix); other
  names that would not fit are refused.

Comparisons: Box, macOS and Windows treat names case-insensitively, and macOS hands back
decomposed (NFD) names for files other clients created while indexes record composed (NFC)
ones. So names are compared by `fold` (NFC, then case-folded) and looked up on disk with
`resolve_nfc`, on Linux too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from box_memory.errors import InvalidInput

BOX_DRIVE_IGNORED_ARTICLE = "https://support.box.com/hc/en-us/articles/360044195433"
MAX_PATH = 260
SUFFIX_ROOM = 4  # "-NNN": room kept for a slug collision suffix

_IGNORED_SUFFIXES = (".tmp", ".bak", ".lnk", ".qbi", ".gdoc", ".gsheet")
_BLOCKED_SUFFIXES = (
    ".pst", ".qbw", ".nd", ".qbw.tlg", ".tlg", ".des", ".qba", ".qba.tlg", ".qbr", ".qby", ".qdt",
    ".pdx",
)  # fmt: skip
_SYSTEM_NAMES = {"desktop.ini", "thumbs.db"}
_HEX8_RE = r"^[0-9A-F]{8}$"
_RESERVED = {"con", "prn", "aux", "nul", *(f"{d}{i}" for d in ("com", "lpt") for i in range(1, 10))}
_WINDOWS_CHARS_RE = r'[<>:"|?*\x00-\x1f]'


def nfc(name: str) -> str:
    """NFC (an ASCII name is its own NFC: no unicodedata, a C extension, loaded for it)."""
    if name.isascii():
        return name
    import unicodedata

    return unicodedata.normalize("NFC", name)


def fold(name: str) -> str:
    """The comparison key of a name: NFC, then case-folded (how Box, macOS and Windows compare)."""
    return nfc(name).casefold()


def box_drive_problem(name: str) -> str | None:
    """Why Box Drive would skip a file of this name (None when it syncs)."""
    low = name.lower()
    if name.startswith("."):
        return "Box Drive does not sync hidden files (names starting with '.')"
    if name.startswith("~"):
        return "Box Drive treats names starting with '~' as temporary files and does not sync them"
    if low in _SYSTEM_NAMES:
        return f"Box Drive does not sync system files such as {name}"
    for suffix in _IGNORED_SUFFIXES:
        if low.endswith(suffix):
            return f"Box Drive does not sync {suffix} files"
    for suffix in _BLOCKED_SUFFIXES:
        if low.endswith(suffix):
            return f"Box Drive blocks {suffix} files"
    if re.compile(_HEX8_RE).match(name):
        return "Box Drive does not sync names of exactly 8 uppercase hex digits with no extension"
    return None


def windows_problem(name: str) -> str | None:
    """Why Windows (and so Box Drive on Windows) cannot hold a file or folder of this name."""
    if not name or name in (".", ".."):
        return "it is not a file name"
    if m := re.compile(_WINDOWS_CHARS_RE).search(name):
        ch = m.group(0)
        shown = repr(ch) if ord(ch) < 32 else f"'{ch}'"
        return f"Windows does not allow {shown} in names"
    if "/" in name or "\\" in name:
        return "it contains a path separator"
    if name.endswith((".", " ")):
        return "Windows drops a trailing dot or space from names"
    stem = name.split(".", 1)[0].rstrip(" ").lower()
    if stem in _RESERVED:
        return f"{stem!r} is a reserved device name on Windows (also with an extension)"
    return None


def name_problem(name: str) -> str | None:
    """The first reason a name cannot live in a Box Drive workspace, or None."""
    return windows_problem(name) or box_drive_problem(name)


def path_problem(rel: str) -> str | None:
    """Why a workspace-relative path cannot be created in a Box Drive workspace, or None."""
    if len(rel) > MAX_PATH:
        return f"it is {len(rel)} characters long; paths stay within {MAX_PATH} from the workspace root"
    for part in rel.split("/"):
        if problem := name_problem(part):
            return f"{part!r}: {problem}"
    return None


def check_name(name: str, what: str) -> str:
    """Refuse, in one line, a user-chosen name Box Drive or Windows would not keep."""
    problem = name_problem(name)
    if problem:
        raise InvalidInput(f"{what} {name!r} cannot be used: {problem}")
    return name


def check_path(rel: str, what: str = "path") -> str:
    problem = path_problem(rel)
    if problem:
        raise InvalidInput(f"refusing to create {what} {rel}: {problem}")
    return rel


def fit_slug(slug: str, folder: str, kind: str) -> str:
    """Cut `slug` so `<folder>/<kind>__<slug>-NNN.md` stays within MAX_PATH (the documented rule)."""
    fixed = len(folder) + 1 + len(kind) + 2 + len(".md") + SUFFIX_ROOM
    room = MAX_PATH - fixed
    if room < 1:
        raise InvalidInput(f"folder {folder}/ leaves no room for a memory name within {MAX_PATH} characters")
    if len(slug) <= room:
        return slug
    return slug[:room].rstrip("-") or "memory"[:room]


def fit_name(stem: str, tail: str, folder: str) -> str:
    """`stem + tail` in `folder`, the stem shortened so the path stays within MAX_PATH."""
    room = MAX_PATH - len(folder) - 1 - len(tail)
    if len(stem) > room:
        stem = stem[: max(room, 1)].rstrip(" .")
    return stem + tail


_COPY_RE = r"^(?P<stem>.+?) \((?P<tag>[^()]*)\)(?P<ext>\.[^.()]+)?$"
_COPY_CANDIDATES = (r"^(?:_index[^\n]*|[^\n]* \([^\n]*)$", re.MULTILINE | re.IGNORECASE)


def conflict_copies(names: list[str]) -> list[str]:
    """Sync conflict copies among a folder's names: index copies (`_index (1).json`, any
    `_index*.json` other than `_index.json`), and `<name> (<tag>).<ext>` beside `<name>.<ext>`
    (or with "conflict" in the tag). When two machines change one file before Box Drive has
    synced it, Box keeps both versions by saving the later one as a copy beside the original
    (https://support.box.com/hc/en-us/articles/360044193873); the copy's exact name is not
    documented, so both shapes are recognised. box-memory's own names never contain " (".
    """
    # Only names with " (" or starting "_index" can be copies: found in one pass over the joined
    # names (a 40,000-file folder costs milliseconds, not a regular expression per name).
    joined = "\n".join(names)
    if joined.count("\n") != max(len(names) - 1, 0):
        found = list(names)  # a name holds a line break: look at every name
    elif " (" not in joined and f"\n{joined}\n".count("\n_index.json\n") == f"\n{joined}".lower().count(
        "\n_index"
    ):
        return []  # no " (", and every name starting "_index" (in any case) is `_index.json` itself
    else:
        found = [n for n in re.compile(*_COPY_CANDIDATES).findall(joined) if n != "_index.json"]
    if not found:
        return []
    present = set(names)
    out = []
    for name in found:
        low = name.lower()
        index_copy = low.startswith("_index") and low.endswith(".json") and name != "_index.json"
        m = re.compile(_COPY_RE).match(name)
        if index_copy or (m and (m["stem"] + (m["ext"] or "") in present or "conflict" in m["tag"].lower())):
            out.append(name)
    return sorted(out)


def resolve_nfc(root: Path, rel: str) -> Path:
    """The on-disk path of workspace-relative `rel`, matching each part by NFC when the exact name
    is not there (macOS hands back NFD names for files other clients made; Linux keeps bytes)."""
    path = root / rel if rel else root
    if os.path.lexists(path):
        return path
    cur = root
    for part in [p for p in rel.split("/") if p]:
        nxt = cur / part
        if not os.path.lexists(nxt):
            if part.isascii():
                # NFD and NFC spell an ASCII name alike, so no other spelling of it can be on disk:
                # missing, without listing the folder (a recall's per-call freshness check asks
                # for folders that do not exist, and a memory folder may hold 40,000 names).
                return path
            want = nfc(part)
            try:
                names = os.listdir(cur)  # noqa: PTH208
            except OSError:
                names = []
            # Plain names are their own NFC, and `part` is not among them: only another spelling
            # can match (checked at C speed first: a 40,000-file folder costs milliseconds).
            others = [] if "".join(names).isascii() else [n for n in names if not n.isascii()]
            match = next((n for n in others if nfc(n) == want), None)
            if match is None:
                return path
            nxt = cur / match
        cur = nxt
    return cur
