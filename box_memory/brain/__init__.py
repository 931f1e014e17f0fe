"""Box Brain: a bounded, read-only, incremental import of one Box folder into a private store.

Box stays the source of truth; the SQLite store under the user data dir is a cache and recall
layer (docs/spec/brain-sync.md). Modules:

- `settings`  per-source settings and their clamps
- `store`     the SQLite store (sources, items, entries + FTS5, runs, review candidates)
- `entry`     the entry text, safe URLs, sanitised names and paths
- `crawl`     breadth-first listing with the completeness rules (Box MCP and local folders)
- `fetch`     content retrieval: Box AI budget and pacing, bounded concurrency, size guard
- `sync`      one run end to end, the per-source lock, `--if-due`
- `review`    the deterministic review pass and accept/reject
- `search`    full-text search for recall (no network imports: recall stays offline)

Nothing here is imported by `box_memory` at start-up; the network stack is imported only by
`sync` when a Box source actually runs.
"""

from __future__ import annotations
