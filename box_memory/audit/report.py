"""`report`: one self-contained HTML page for the people who answer for an agent's memory.

What it shows: memories written per week by agent (a bar chart), recent decisions with their agent
and sources, supersede chains drawn as a graph, stale and orphaned companions, folders this user
may not read, index health, and Box Brain candidates awaiting review; Box links where the
workspace is in Box.

The page needs nothing but itself: no scripts at all, styles inline, the chart and the graph are
SVG drawn here, and a Content-Security-Policy that forbids every fetch, so it opens the same on an
air-gapped machine and can be attached to a review. Every string that comes from a memory, an
index, the config or the Box Brain goes through `html.escape`: untrusted text is data.

The data is the timeline's (`timeline.memory_events`, the indexes only) and `status`'s; the only
memory files read are the few recent decisions (for their sources).
"""

from __future__ import annotations

import datetime as dt
import html
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Annotated, Any

from box_memory.errors import BoxMemoryError, InvalidInput
from box_memory.format.model import now_iso, parse_time
from box_memory.params import Param
from box_memory.result import Result
from box_memory.workspace.resolve import Workspace

DEFAULT_WEEKS = 12
MAX_WEEKS = 520
RECENT_DECISIONS = 15
MAX_CHAINS = 12
MAX_CANDIDATES = 50
MEMORY_EVENTS = ("write", "supersede", "archive")
# Bar colours, one per agent in order of volume (readable on white, distinct in grey too).
PALETTE = ("#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#319795", "#b7791f", "#718096")
OTHER = "other agents"
NO_AGENT = "(no agent)"


@dataclass
class ReportRequest:
    """The MCP `report` tool's parameters (the command also takes `-o FILE`)."""

    weeks: Annotated[int, Param("Weeks of history in the chart.", ge=1, le=MAX_WEEKS)] = DEFAULT_WEEKS
    html: Annotated[bool, Param("Also return the self-contained HTML page (data.html).")] = False


def _week_start(t: dt.datetime) -> dt.date:
    d = t.date()
    return d - dt.timedelta(days=d.weekday())


def _per_week(events: list[dict[str, Any]], weeks: int, now: dt.datetime) -> dict[str, Any]:
    """Memories written per ISO week (Monday) and agent, the last `weeks` weeks; the seven most
    active agents by name, the rest together."""
    first = _week_start(now) - dt.timedelta(weeks=weeks - 1)
    starts = [first + dt.timedelta(weeks=i) for i in range(weeks)]
    counts: dict[dt.date, Counter[str]] = defaultdict(Counter)
    for ev in events:
        if ev["event"] not in MEMORY_EVENTS or (ev["event"] == "archive" and not ev["supersedes"]):
            continue
        t = parse_time(ev["at"])
        if t is None:
            continue
        wk = _week_start(t)
        if wk >= first:
            counts[wk][ev["agent"] or NO_AGENT] += 1
    total: Counter[str] = Counter()
    for c in counts.values():
        total.update(c)
    named = [a for a, _ in sorted(total.items(), key=lambda x: (-x[1], x[0]))]
    if len(named) > len(PALETTE):
        named = [*named[: len(PALETTE) - 1], OTHER]
    keep = set(named)
    rows = []
    for wk in starts:
        c = counts.get(wk, Counter())
        row = {a: n for a, n in c.items() if a in keep}
        other = sum(n for a, n in c.items() if a not in keep)
        if other:
            row[OTHER] = row.get(OTHER, 0) + other
        rows.append({"week": wk.isoformat(), "by_agent": row, "total": sum(c.values())})
    return {"agents": named, "weeks": rows}


def _chains(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Supersede chains (two or more memories), the most recently extended first."""
    by_id: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev["event"] in MEMORY_EVENTS and ev["id"] and ev["id"] not in by_id:
            by_id[ev["id"]] = ev
    nxt: dict[str, str] = {}
    prev: dict[str, str] = {}
    for mid, ev in by_id.items():
        if ev["superseded_by"]:
            nxt[mid] = ev["superseded_by"]
            prev.setdefault(ev["superseded_by"], mid)
        for old in ev["supersedes"]:
            nxt.setdefault(old, mid)
            prev.setdefault(mid, old)
    out: list[list[dict[str, Any]]] = []
    seen: set[str] = set()
    for head in sorted(m for m in nxt if m not in prev):
        chain: list[dict[str, Any]] = []
        cur: str | None = head
        while cur is not None and cur not in seen:
            seen.add(cur)
            chain.append(_node(cur, by_id.get(cur)))
            cur = nxt.get(cur)
        if len(chain) > 1:
            out.append(chain)
    out.sort(key=lambda ch: str(ch[-1].get("at") or ""), reverse=True)
    return out


def _node(mem_id: str, ev: dict[str, Any] | None) -> dict[str, Any]:
    if ev is None:  # a member the indexes do not list (an archived companion, another team's)
        return {"id": mem_id, "title": None, "status": None, "agent": None, "at": None, "url": None}
    return {k: ev.get(k) for k in ("id", "title", "kind", "status", "agent", "at", "url", "path")}


def _decisions(ws: Workspace, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The most recent decisions with their sources (read from those few files)."""
    from box_memory.workspace.index import read_memory

    picked = [ev for ev in events if ev["kind"] == "decision" and ev["event"] in ("write", "supersede")][
        :RECENT_DECISIONS
    ]
    out = []
    for ev in picked:
        row = {
            k: ev.get(k)
            for k in ("id", "title", "status", "agent", "at", "team", "path", "url", "supersedes")
        }
        row["superseded_by"] = ev.get("superseded_by")
        try:
            mem = read_memory(ws, ev["path"])
            raw = mem.meta.get("sources")
            row["sources"] = [
                {"type": str(s.get("type") or ""), "ref": str(s.get("ref") or "")}
                for s in (raw if isinstance(raw, list) else [])
                if isinstance(s, dict)
            ]
            row["summary"] = _summary(mem.body)
        except BoxMemoryError as e:
            row["sources"], row["summary"], row["problem"] = [], "", str(e)
        out.append(row)
    return out


def _summary(body: str) -> str:
    """The body's `> one-line summary`, or its first line of prose."""
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("> "):
            return s[2:][:300]
    for line in body.splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            return s[:300]
    return ""


def _brain(limit: int = MAX_CANDIDATES) -> tuple[list[dict[str, Any]], str | None]:
    """Box Brain candidates awaiting review (the user's brain store), or why there are none."""
    from box_memory.brain import service

    try:
        rows = service.candidates(None, "proposed", limit).data["candidates"]
    except BoxMemoryError as e:
        return [], str(e)
    keep = ("id", "kind", "title", "confidence", "rationale", "created_at")
    out = []
    for c in rows:
        row = {k: c.get(k) for k in keep}
        ev = next(iter(c.get("evidence") or []), None) or {}
        row["evidence"] = {k: ev.get(k) for k in ("file", "url", "memory_id", "memory_title")}
        out.append(row)
    return out, None


def report_data(ws: Workspace, *, weeks: int = DEFAULT_WEEKS, now: dt.datetime | None = None) -> Result:
    """Everything the page shows, as data (`report --json`, the MCP `report` tool)."""
    from box_memory.audit.timeline import box_url, memory_events, team_events, time_key
    from box_memory.maintenance.status import workspace_status

    if not 1 <= weeks <= MAX_WEEKS:
        raise InvalidInput(f"--weeks must be between 1 and {MAX_WEEKS}")
    now = now or dt.datetime.now(dt.UTC)
    st = workspace_status(ws)
    events, _, _ = memory_events(ws)
    events += team_events(ws)
    events.sort(key=lambda ev: (time_key(ev["at"]), ev["id"] or ""), reverse=True)
    brain, brain_problem = _brain()
    root_id = ws.config.data.get("workspace_root_id")
    health = st["index_health"]
    comp = st.get("companions") or {}
    data: dict[str, Any] = {
        "generated_at": now_iso(),
        "workspace": {
            "name": ws.name,
            "root": st["workspace"]["root"],
            "backend": st["workspace"]["backend"],
            "tier": st["workspace"]["tier"],
            "url": f"https://app.box.com/folder/{root_id}" if str(root_id or "").isdigit() else None,
        },
        "totals": st["totals"],
        "by_status": st["by_status"],
        "by_kind": st["by_kind"],
        "per_week": _per_week(events, weeks, now),
        "recent_events": events[:20],
        "recent_decisions": _decisions(ws, events),
        "chains": _chains(events)[:MAX_CHAINS],
        "stale_companions": [
            {**i, "url": box_url(i.get("file_id"))} for i in comp.get("items", []) if i.get("state")
        ],
        "unreadable": st["unreadable"],
        "index_health": {
            "ok": health["ok"],
            "folders": [
                {k: f[k] for k in ("folder", "entries", "updated_at", "drift", "orphans")}
                for f in health["folders"]
            ],
            "problems": health["problems"],
            "rollup": health["rollup"],
            "conflict_copies": health["conflict_copies"],
        },
        "brain_candidates": brain,
        "brain_problem": brain_problem,
    }
    data["summary"] = summary_lines(data)
    return Result(data)


def summary_lines(d: dict[str, Any]) -> list[str]:
    """A few sentences a person can read (the MCP tool's summary, the command's output)."""
    weeks = d["per_week"]["weeks"]
    recent = sum(w["total"] for w in weeks[-1:])
    h = d["index_health"]
    stale = [c for c in d["stale_companions"] if c.get("state") == "stale"]
    orphaned = [c for c in d["stale_companions"] if c.get("state") == "orphaned"]
    lines = [
        f"{d['totals']['memories']} memories and {d['totals']['companions']} companions in "
        f"{d['workspace']['name']}; {sum(w['total'] for w in weeks)} written in the last {len(weeks)} "
        f"week(s), {recent} this week.",
        f"{len(d['chains'])} supersede chain(s); {len(d['recent_decisions'])} recent decision(s).",
        "Index health: " + ("ok." if h["ok"] else "needs attention (run `box-memory index-rebuild`)."),
    ]
    if stale or orphaned:
        lines.append(f"Companions: {len(stale)} stale, {len(orphaned)} orphaned.")
    if d["unreadable"]:
        lines.append(f"Not readable by this user: {', '.join(d['unreadable'])}.")
    if d["brain_candidates"]:
        n = len(d["brain_candidates"])
        shown = f"{n} or more" if n >= MAX_CANDIDATES else str(n)  # the page lists the newest
        lines.append(f"{shown} Box Brain candidate(s) await review (`box-memory brain review`).")
    return lines


# --- the page ---------------------------------------------------------------------------------


def e(value: object) -> str:
    """Escaped for HTML text and double-quoted attributes."""
    return html.escape("" if value is None else str(value), quote=True)


def _link(text: object, url: object) -> str:
    u = str(url or "")
    if u.startswith("https://app.box.com/"):
        return f'<a href="{e(u)}">{e(text)}</a>'
    return e(text)


def _short(text: object, n: int) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def chart_svg(per_week: dict[str, Any]) -> str:
    """Stacked bars, one per week, a colour per agent, with a legend."""
    weeks = per_week["weeks"]
    agents = per_week["agents"]
    colour = {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(agents)}
    top = max([w["total"] for w in weeks] + [1])
    bar_w, gap, left, height, base = 40, 12, 40, 200, 220
    width = left + len(weeks) * (bar_w + gap) + 10
    parts = [
        f'<svg id="chart" width="{width}" height="{base + 40}" '
        f'viewBox="0 0 {width} {base + 40}" role="img" aria-label="Memories written per week by agent">',
        f'<line x1="{left - 4}" y1="{base}" x2="{width - 5}" y2="{base}" stroke="#888"/>',
        f'<text x="{left - 8}" y="{base - height + 4}" text-anchor="end" class="axis">{top}</text>',
        f'<text x="{left - 8}" y="{base}" text-anchor="end" class="axis">0</text>',
    ]
    for i, w in enumerate(weeks):
        x = left + i * (bar_w + gap)
        y = base
        for a in agents:
            n = w["by_agent"].get(a, 0)
            if not n:
                continue
            h = max(1, round(n / top * height))
            y -= h
            parts.append(
                f'<rect class="bar" x="{x}" y="{y}" width="{bar_w}" height="{h}" fill="{colour[a]}">'
                f"<title>{e(w['week'])}: {e(a)} {n}</title></rect>"
            )
        if i % 2 == 0 or len(weeks) <= 8:
            parts.append(
                f'<text x="{x + bar_w / 2}" y="{base + 14}" text-anchor="middle" class="axis">'
                f"{e(w['week'][5:])}</text>"
            )
    parts.append("</svg>")
    legend = "".join(f'<span class="key"><i style="background:{colour[a]}"></i>{e(a)}</span>' for a in agents)
    return "".join(parts) + (f'<div class="legend">{legend}</div>' if agents else "")


def graph_svg(chains: list[list[dict[str, Any]]]) -> str:
    """Each supersede chain a row of boxes, oldest left, arrows to the memory that replaced it."""
    if not chains:
        return '<p class="none">No supersede chains yet.</p>'
    box_w, box_h, gap, row_h, pad = 190, 46, 46, 70, 10
    longest = max(len(c) for c in chains)
    width = pad * 2 + longest * box_w + (longest - 1) * gap
    height = pad * 2 + len(chains) * row_h
    parts = [
        f'<svg id="chains" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="Supersede chains">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    for r, chain in enumerate(chains):
        y = pad + r * row_h
        for i, node in enumerate(chain):
            x = pad + i * (box_w + gap)
            current = i == len(chain) - 1
            fill = "#e6f4ea" if current else "#edf2f7"
            stroke = "#38a169" if current else "#a0aec0"
            title = node.get("title") or "(not in the indexes)"
            label = f"{_short(title, 26)}"
            sub = f"{node.get('status') or '?'} · {_short(node.get('agent') or '', 14)}"
            inner = (
                f'<rect class="node" x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="6" '
                f'fill="{fill}" stroke="{stroke}"><title>{e(node["id"])}: {e(title)}</title></rect>'
                f'<text x="{x + 8}" y="{y + 19}" class="nt">{e(label)}</text>'
                f'<text x="{x + 8}" y="{y + 36}" class="ns">{e(sub)}</text>'
            )
            url = str(node.get("url") or "")
            if url.startswith("https://app.box.com/"):
                inner = f'<a href="{e(url)}">{inner}</a>'
            parts.append(inner)
            if not current:
                x1, x2, ym = x + box_w, x + box_w + gap - 2, y + box_h / 2
                parts.append(
                    f'<line class="edge" x1="{x1}" y1="{ym}" x2="{x2}" y2="{ym}" stroke="#555" '
                    'stroke-width="1.5" marker-end="url(#arrow)"/>'
                )
    parts.append("</svg>")
    return "".join(parts)


# Nothing may be fetched: no scripts, no network, no external styles, fonts or images.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1a202c;
background:#fff;max-width:1200px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e2e8f0}
.meta{color:#4a5568}table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #edf2f7;vertical-align:top}
th{background:#f7fafc}.ok{color:#276749;font-weight:600}.bad{color:#c05621;font-weight:600}
.axis{font-size:10px;fill:#4a5568}.nt{font-size:12px;fill:#1a202c}.ns{font-size:10px;fill:#4a5568}
.legend{margin:6px 0}.key{margin-right:14px;white-space:nowrap}
.key i{display:inline-block;width:10px;height:10px;margin-right:5px}
.none{color:#718096}code{font-size:12px}.scroll{overflow-x:auto}
ul.summary{margin:8px 0 0 18px;padding:0}
"""


def _table(headers: list[str], rows: list[list[str]], empty: str) -> str:
    if not rows:
        return f'<p class="none">{e(empty)}</p>'
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _chain_cell(x: dict[str, Any]) -> str:
    parts = []
    if x.get("supersedes"):
        parts.append("supersedes " + ", ".join(f"<code>{e(i)}</code>" for i in x["supersedes"]))
    if x.get("superseded_by"):
        parts.append(f"superseded by <code>{e(x['superseded_by'])}</code>")
    return "<br>".join(parts)


def _when(at: object) -> str:
    return e(str(at or "")[:16].replace("T", " "))


def render_html(d: dict[str, Any]) -> str:
    """The page. Cells are escaped here (`e`, `_link`); nothing from `d` reaches it raw."""
    w = d["workspace"]
    h = d["index_health"]
    decisions = [
        [
            _when(x["at"]),
            _link(x["title"], x["url"])
            + (f'<br><span class="meta">{e(x.get("summary"))}</span>' if x.get("summary") else ""),
            e(x.get("agent") or ""),
            e(x.get("status")),
            "<br>".join(f"<code>{e(s['type'])}:{e(s['ref'])}</code>" for s in x.get("sources") or [])
            or e(x.get("problem") or ""),
            _chain_cell(x),
        ]
        for x in d["recent_decisions"]
    ]
    events = [
        [
            _when(x["at"]),
            e(x["event"]),
            e(x.get("agent") or ""),
            e(x.get("kind") or ""),
            _link(x.get("title"), x.get("url")),
            _chain_cell(x),
        ]
        for x in d["recent_events"]
    ]
    companions = [
        [e(c.get("state")), _link(c.get("path"), c.get("url")), e(c.get("binary")), e(c.get("id"))]
        for c in d["stale_companions"]
    ]
    folders = [
        [
            e(f["folder"]),
            e(f["entries"]),
            _when(f["updated_at"]),
            e("; ".join(f["drift"]) or "ok"),
            e(f["orphans"]),
        ]
        for f in h["folders"]
    ]
    problems = [[e(p["folder"]), e(p["problem"]), e(p.get("detail"))] for p in h["problems"]]
    brain = [
        [
            e(c.get("id")),
            e(c.get("kind")),
            e(c.get("title")),
            e(c.get("confidence")),
            e(c.get("rationale")),
            _link(c["evidence"].get("file") or c["evidence"].get("memory_title"), c["evidence"].get("url")),
        ]
        for c in d["brain_candidates"]
    ]
    health = '<span class="ok">ok</span>' if h["ok"] else '<span class="bad">needs attention</span>'
    unreadable = (
        "<ul>" + "".join(f"<li><code>{e(u)}</code></li>" for u in d["unreadable"]) + "</ul>"
        if d["unreadable"]
        else '<p class="none">Every folder was readable.</p>'
    )
    summary = "".join(f"<li>{e(s)}</li>" for s in d["summary"])
    no_brain = d.get("brain_problem") or "Nothing awaits review."
    counts = ", ".join(f"{e(k)} {e(v)}" for k, v in d["by_kind"].items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>box-memory report: {e(w["name"])}</title><style>{_CSS}</style></head>
<body>
<h1>box-memory report: {_link(w["name"], w["url"])}</h1>
<p class="meta">{e(w["root"])} ({e(w["backend"])}, tier {e(w["tier"])})
· generated {_when(d["generated_at"])} UTC · {e(d["totals"]["memories"])} memories ({counts})</p>
<ul class="summary">{summary}</ul>
<h2>Memories written per week, by agent</h2>
<div class="scroll">{chart_svg(d["per_week"])}</div>
<h2>Supersede chains</h2>
<p class="meta">Oldest on the left; green is the current memory.</p>
<div class="scroll">{graph_svg(d["chains"])}</div>
<h2>Recent decisions</h2>
{_table(["written", "decision", "agent", "status", "sources", "chain"], decisions, "No decisions yet.")}
<h2>Recent activity</h2>
{_table(["time", "event", "agent", "kind", "title", "chain"], events, "Nothing written yet.")}
<h2>Stale and orphaned companions</h2>
{_table(["state", "companion", "binary", "id"], companions, "Every companion matches its binary.")}
<h2>Unreadable folders</h2>
{unreadable}
<h2>Index health: {health}</h2>
<p class="meta">Rollup: {e(h["rollup"].get("state"))}; conflict copies: {e(len(h["conflict_copies"]))}</p>
{_table(["folder", "entries", "updated", "drift", "orphans"], folders, "No folder indexes.")}
{_table(["folder", "problem", "detail"], problems, "No index problems.")}
<h2>Box Brain candidates awaiting review</h2>
{_table(["#", "kind", "title", "confidence", "why", "evidence"], brain, no_brain)}
</body></html>
"""


def write_report(ws: Workspace, output: str, *, weeks: int = DEFAULT_WEEKS) -> Result:
    """The `report` service: gather the data, render the page, write it atomically to `output`
    (outside the workspace's bookkeeping: any path the user names)."""
    import os
    from pathlib import Path

    target = Path(output).expanduser()
    if target.is_dir():
        raise InvalidInput(f"{output} is a folder; name the report file (e.g. -o report.html)")
    if not target.parent.is_dir():
        raise InvalidInput(f"cannot write {output}: folder {target.parent} does not exist")
    res = report_data(ws, weeks=weeks)
    page = render_html(res.data).encode("utf-8")
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(page)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return res.with_data(output=str(target), bytes=len(page))
