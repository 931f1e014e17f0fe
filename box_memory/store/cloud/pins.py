"""Big Box folders read without listing them: their `_index.json` found and stat'ed by Box file id,
memory files fetched by file id, and the text of memories searched with Box search.

Listing a folder of 40,000 memories is 40 pages or more (400 at the 100 entries an MCP page may
hold), so a recall on a fresh machine must not list the memory folders. Instead:

- `pin_indexes` finds each big folder's `_index.json` by its Box file id: the ids the recall cache
  remembered (one `get_file_details` each, concurrently), or, on a machine that has none, one
  `search_files_keyword` for `_index.json` files under the workspace (when one of them is big, the
  small ones found are read through their index too, this once). An item is pinned only when
  Box says it is a file named `_index.json` whose parent is the folder's Box id (the config's
  `folder_ids`); its signature is its own size, modified time, id, etag and sha1, and its text is
  accepted only when it hashes to that sha1 (reading.py). A folder whose index is not pinned is
  listed as before. Another machine's write gives the index a new version, hence a new sha1 and
  etag in the next `get_file_details`: the next recall sees it.
- `fetch_bodies` reads memory files by file id, concurrently, verified by sha1 (the one a search
  hit carries, else `get_file_details`'s).
- `search_text` asks Box search for the query's words, ORed (developer.box.com/guides/search/
  query-operators: a multi-word query is implicitly ORed unless another operator is used, and
  operators count only in upper case; ours are explicit), scoped to the workspace folder and to
  `.md` files. Box's search index lags recent writes by minutes (metadata.SEARCH_LAG_S).

A pinned folder's files are never listed, so what only a listing shows - a memory file the index
does not list, or one changed in place behind the index - is not seen by recall there; listing the
folder (any write to it, `index-rebuild`, `index-rebuild --check`) does.
"""

from __future__ import annotations

from typing import Any

from box_memory.box.payload import listing
from box_memory.errors import BoxMemoryError
from box_memory.format.model import INDEX_NAME
from box_memory.store.base import join
from box_memory.store.cloud.folders import PREFETCH_CONCURRENCY
from box_memory.store.cloud.items import as_object, envelope_text, is_folder, item_sha1, sha1_of
from box_memory.store.cloud.reading import Reading

__all__ = ["PIN_MIN_BYTES", "Pins"]

# An index this large (about 300 entries) belongs to a folder worth not listing; smaller folders
# are listed as before (one page, and the listing also shows files the index misses).
PIN_MIN_BYTES = 256 * 1024
PIN_FIELDS = ["type", "id", "name", "etag", "sha1", "size", "modified_at", "file_version", "parent"]
SEARCH_PAGE = 200  # the most hits one Box search call returns


class Pins(Reading):
    """Index files found by id, memory files fetched by id, memory text searched in Box."""

    def _folder_paths(self) -> dict[str, str]:
        """{Box folder id: workspace folder path} of the folders the config names."""
        return {fid: path for path, fid in self._logical_ids().items() if path}

    def pin_indexes(self, known: dict[str, str] | None) -> dict[str, str]:
        """Pin the `_index.json` of big folders: `known` {folder: index file id} (from the recall
        cache), or, when None (a fresh machine), every big one Box search finds. Returns
        {folder: index file id} of those pinned."""
        folders = self._folder_paths()
        found = self._search_indexes(folders) if known is None else self._index_details(known, folders)
        for folder, item in found.items():
            self._pins[join(folder, INDEX_NAME)] = item
            self._unlisted[folder] = str(folders_id(folders, folder))
        return {folder: str(item["id"]) for folder, item in found.items()}

    def _index_details(self, known: dict[str, str], folders: dict[str, str]) -> dict[str, dict[str, Any]]:
        ids = {path: fid for fid, path in folders.items()}
        wanted = [(f, fid) for f, fid in known.items() if f in ids and str(fid).isdigit()]
        if not wanted:
            return {}
        answers = self.box.call_many(
            [("get_file_details", {"file_id": str(fid), "fields": PIN_FIELDS}) for _, fid in wanted],
            concurrency=PREFETCH_CONCURRENCY,
        )
        out: dict[str, dict[str, Any]] = {}
        for (folder, _), answer in zip(wanted, answers, strict=True):
            item = None if isinstance(answer, BaseException) else as_object(answer)
            if item is not None and _is_index_of(item, ids[folder]):
                out[folder] = item  # a 404 or a moved index: the folder is listed instead
        return out

    def _search_indexes(self, folders: dict[str, str]) -> dict[str, dict[str, Any]]:
        if not folders or not self.has_tool("search_files_keyword"):
            return {}
        try:
            payload = self.call(
                "search_files_keyword",
                {
                    "query": INDEX_NAME,
                    "ancestor_folder_id": self.root_id,
                    "file_extensions": ["json"],
                    "fields": PIN_FIELDS,
                    "limit": SEARCH_PAGE,
                },
            )
            hits = listing(payload, tool="search_files_keyword").entries
        except BoxMemoryError:
            return {}  # every folder is listed, as before
        out: dict[str, dict[str, Any]] = {}
        big, elsewhere = False, False
        for item in hits:
            parent = str((item.get("parent") or {}).get("id") or "")
            folder = folders.get(parent)
            if folder is not None and _is_index_of(item, folders_id(folders, folder)):
                out[folder] = item
                size = item.get("size")
                big = big or (isinstance(size, int) and size >= PIN_MIN_BYTES)
            elif parent != self.root_id and item.get("name") == INDEX_NAME:
                elsewhere = True  # an index in a folder the config does not name (companions/)
        if not big:
            return {}  # a small workspace: every folder listed, as before
        # A big workspace on a fresh machine: every folder whose index was found is read through
        # it, the small ones too (a listing each saved; they are listed again from the next
        # recall on, as only big folders' pins are remembered). And when the search saw every
        # index and none was outside those folders, no other folder has one: `exists` answers
        # that without listing a team folder to look for its companions/ (search lag: an index
        # made minutes ago is seen from the next recall on).
        self._no_other_index = not elsewhere and len(hits) < SEARCH_PAGE
        return out

    def fetch_bodies(self, wanted: dict[str, str | None]) -> dict[str, bytes]:
        """{file id: bytes} of the memory files `wanted` ({file id: sha1, or None when unknown}),
        each accepted only when it hashes to the sha1 Box reports; from the content cache when it
        holds that version, else fetched concurrently. A file that fails is left out."""
        sha = {fid: s for fid, s in wanted.items() if s}
        unknown = [fid for fid in wanted if fid not in sha]
        if unknown:
            answers = self.box.call_many(
                [("get_file_details", {"file_id": fid, "fields": ["sha1"]}) for fid in unknown],
                concurrency=PREFETCH_CONCURRENCY,
            )
            for fid, answer in zip(unknown, answers, strict=True):
                item = None if isinstance(answer, BaseException) else as_object(answer)
                if item is not None and item_sha1(item):
                    sha[fid] = str(item_sha1(item))
        out: dict[str, bytes] = {}
        todo: list[str] = []
        for fid, s in sha.items():
            cached = self.cache.get(fid, s)
            if cached is not None:
                out[fid] = cached
            else:
                todo.append(fid)
        answers = self.box.call_many(
            [("get_file_content", {"file_id": fid}) for fid in todo], concurrency=PREFETCH_CONCURRENCY
        )
        for fid, answer in zip(todo, answers, strict=True):
            text = envelope_text(answer)
            if text is not None and sha1_of(data := text.encode("utf-8")) == sha[fid]:
                self.cache.put(fid, sha[fid], data)
                out[fid] = data
        return out

    def cached_text(self, file_id: str, sha1: str | None) -> bytes | None:
        """The file's bytes from the content cache, when it holds that version (never a call)."""
        return self.cache.get(file_id, sha1) if sha1 else None

    def search_text(self, words: list[str], limit: int) -> list[dict[str, Any]] | None:
        """Memory files whose name or text holds any of `words`, best first as Box ranks them:
        [{file_id, sha1, path}] (path None when the folder is not one the config names). None when
        this Box has no search tool or the search failed."""
        if not words or not self.has_tool("search_files_keyword"):
            return None
        try:
            payload = self.call(
                "search_files_keyword",
                {
                    "query": " OR ".join(words),
                    "ancestor_folder_id": self.root_id,
                    "file_extensions": ["md"],
                    "fields": PIN_FIELDS,
                    "limit": max(1, min(SEARCH_PAGE, limit)),
                },
            )
            hits = listing(payload, tool="search_files_keyword").entries
        except BoxMemoryError as e:
            self.warnings.append(f"Box search failed, memory text not held here was not searched: {e}")
            return None
        folders = self._folder_paths()
        out: list[dict[str, Any]] = []
        for item in hits:
            if is_folder(item) or item.get("id") is None:
                continue
            folder = folders.get(str((item.get("parent") or {}).get("id") or ""))
            name = str(item.get("name") or "")
            out.append(
                {
                    "file_id": str(item["id"]),
                    "sha1": item_sha1(item),
                    "path": join(folder, name) if folder is not None and name else None,
                }
            )
        return out


def folders_id(folders: dict[str, str], folder: str) -> str:
    return next(fid for fid, path in folders.items() if path == folder)


def _is_index_of(item: dict[str, Any], folder_id: str) -> bool:
    """Whether Box says `item` is the `_index.json` file of the folder `folder_id`."""
    parent = item.get("parent")
    return (
        item.get("type", "file") == "file"
        and item.get("name") == INDEX_NAME
        and isinstance(parent, dict)
        and str(parent.get("id")) == str(folder_id)
        and bool(item_sha1(item))
    )
