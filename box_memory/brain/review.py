"""The review pass ("Dreaming"): deterministic heuristics that PROPOSE memories, never write them.

Over the documents a run imported (new or changed) and the workspace's active memories it looks for:
fact (explicit decisions and key facts), conflict (a document contradicts an active memory on the
same subject: a different number for the same quantity, a different value for the same key, or the
same statement negated), stale_policy (a memory cites a Box file that changed since), correction (a
document says something was wrong or replaced), workflow (a recurring cadence), open_loop
(TODO/TBD/unchecked boxes/"follow up") and archive (a document retires what an active memory is
about: "X is retired / deprecated / decommissioned / no longer used"). Every candidate keeps its
rationale, evidence (file name, Box URL, excerpt) and a confidence; a person accepts or rejects it.
Accepting writes one append-only memory with `sources: [{type: box_file, ref, url, version}]`; a
conflict proposes superseding the memory it contradicts; accepting an archive candidate supersedes
the memory with an `archived` memory that records why (nothing is ever deleted). A proposed
candidate can be edited (title, statement) before it is accepted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from box_memory.brain.entry import clean_name
from box_memory.result import Result

REVIEW_EVERY_S = 6 * 3600
MAX_CANDIDATES_PER_RUN = 50
MAX_PER_DOC = {"fact": 3, "workflow": 3, "open_loop": 1, "correction": 2, "conflict": 5, "archive": 3}
_RETIRED = re.compile(
    r"\b(?:is|are|was|were|has been|have been|will be|got)\s+(?:now\s+)?(?:retired|deprecated|decommissioned|"
    r"sunset|discontinued|withdrawn|obsolete|shut down|turned off|abandoned)\b"
    r"|\bno longer (?:used|in use|supported|applies|apply|valid|in effect|maintained)\b",
    re.I,
)
MAX_MEMORIES = 5000
EXCERPT = 240

_STOP = frozenset(
    [
        "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
        "be", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did",
        "do", "does", "doing", "down", "during", "each", "few", "for", "from", "had", "has", "have",
        "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it",
        "its", "itself", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "on",
        "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she", "should", "so",
        "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these", "they",
        "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were",
        "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
        "your", "yours", "shall", "may", "might", "must", "per", "via"
    ]
)  # fmt: skip
_NEGATIONS = frozenset({"not", "no", "never", "without", "prohibited", "forbidden", "disallowed", "banned"})
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_UNCHECKED = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*\[ \]\s*(.+)$")
_LOOP_MARK = re.compile(r"\b(TODO|TBD|FIXME)\b|\bfollow[- ]?up\b|\baction items?\b|\bopen questions?\b", re.I)
_CADENCE = re.compile(
    r"\b(?:every|each)\s+(?:other\s+)?(?:day|weekday|week|month|quarter|year|sprint|morning|evening|night|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|\d+\s+(?:days|weeks|months|hours))\b"
    r"|\b(?:daily|nightly|weekly|biweekly|bi-weekly|fortnightly|monthly|quarterly|annually|yearly)\b"
    r"|\bon the (?:first|second|third|fourth|last) (?:\w+ )?of (?:each|every|the) (?:month|quarter)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:we|the team|the company)\s+(?:have\s+)?(?:decided|agreed|chose|will use|standardi[sz]ed on)\b"
    r"|\bdecision\s*:|\bit (?:was|has been) decided\b|\bis the (?:single )?source of truth\b",
    re.I,
)
_CORRECTION = re.compile(
    r"\b(?:correction|erratum|errata|corrected|was incorrect|is incorrect|was wrong|no longer|"
    r"previously stated|instead of|supersedes|superseded by|replaces|replaced by|deprecated)\b",
    re.I,
)
_FACT_KEYS = frozenset(
    [
        "owner", "budget", "deadline", "due", "effective", "version", "status", "decision", "policy",
        "contact", "retention", "sla", "rto", "rpo", "region", "vendor", "approver", "approved", "cost",
        "price", "term", "renewal"
    ]
)  # fmt: skip
_KEY_VALUE = re.compile(r"^\s*(?:[-*+]\s*)?\**([A-Za-z][A-Za-z ]{1,30}?)\**\s*:\s*(\S.{0,118})$")
_QUANTITY = re.compile(
    r"(?<![\w.])([$€£])?\s?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*"
    r"(%|percent|days?|weeks?|months?|years?|hours?|hrs?|minutes?|mins?|seconds?|secs?|"
    r"kb|mb|gb|tb|eur|usd|gbp|dollars?|euros?|users?|seats?|licen[cs]es?|times?|people|requests?)?\b",
    re.I,
)
_UNITS = {
    "percent": "%",
    "day": "day",
    "week": "week",
    "month": "month",
    "year": "year",
    "hour": "hour",
    "hr": "hour",
    "minute": "minute",
    "min": "minute",
    "second": "second",
    "sec": "second",
    "dollar": "usd",
    "euro": "eur",
    "licence": "license",
    "people": "user",
}
_CURRENCY = {"$": "usd", "€": "eur", "£": "gbp"}
_UNIT_WORDS = frozenset(
    [
        "percent", "day", "days", "week", "weeks", "month", "months", "year", "years", "hour", "hours",
        "hrs", "minute", "minutes", "mins", "second", "seconds", "secs", "eur", "usd", "gbp", "dollar",
        "dollars", "euro", "euros", "user", "users", "seat", "seats", "license", "licenses", "licence",
        "licences", "time", "times", "people", "request", "requests"
    ]
)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Inputs


@dataclass
class Doc:
    """A document the run imported (new or changed)."""

    box_id: str
    name: str
    url: str | None
    path: str
    version: str | None
    text: str
    replaced: bool = False

    def evidence(self, excerpt: str) -> dict[str, Any]:
        return {
            "file": self.name,
            "box_id": self.box_id,
            "url": self.url,
            "path": self.path,
            "version": self.version,
            "excerpt": _excerpt(excerpt),
        }


@dataclass
class Mem:
    """An active workspace memory, as the review reads it."""

    id: str
    title: str
    kind: str
    body: str
    sources: list[dict[str, Any]] = field(default_factory=list)

    def evidence(self, excerpt: str) -> dict[str, Any]:
        return {"memory_id": self.id, "memory_title": self.title, "excerpt": _excerpt(excerpt)}


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 1].rstrip() + "…"


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2 and not w.isdigit()}


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip().lstrip("#>*-+ ").strip()
        if not line or set(line) <= set("-=*_`|#"):
            continue
        out.extend(s.strip() for s in _SENTENCE_SPLIT.split(line) if s.strip())
    return out


def safe_title(text: str, limit: int = 120) -> str:
    """A memory title from untrusted text: one line, no path separators or '..', capped."""
    title = clean_name(text, 1000).replace("/", "-").replace("\\", "-")
    while ".." in title:
        title = title.replace("..", ".")
    title = title.strip(" .-") or "Box document"
    if len(title) > limit:
        title = title[: limit - 1].rstrip() + "…"
    return title


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


# ---------------------------------------------------------------------------------------------
# Claims (for conflicts)


@dataclass(frozen=True)
class Quantity:
    subject: frozenset[str]
    unit: str
    value: float
    sentence: str


def _unit(raw: str | None, currency: str | None) -> str | None:
    if currency:
        return _CURRENCY.get(currency)
    if not raw:
        return None
    u = raw.lower()
    if u in _UNITS:
        return _UNITS[u]
    if u.endswith("s") and u[:-1] in _UNITS:
        return _UNITS[u[:-1]]
    return u[:-1] if u.endswith("s") and len(u) > 3 else u


def quantities(text: str) -> list[Quantity]:
    out: list[Quantity] = []
    for sentence in sentences(text):
        found = []
        for m in _QUANTITY.finditer(sentence):
            unit = _unit(m.group(3), m.group(1))
            if unit is None:
                continue
            try:
                value = float(m.group(2).replace(",", ""))
            except ValueError:
                continue
            found.append((unit, value))
        if not found:
            continue
        subject = frozenset(words(sentence) - _UNIT_WORDS)
        for unit, value in found:
            out.append(Quantity(subject, unit, value, sentence))
    return out


def key_values(text: str) -> dict[str, tuple[str, str]]:
    """`Key: value` lines for well-known keys -> {key: (value, line)}."""
    out: dict[str, tuple[str, str]] = {}
    for raw in text.splitlines():
        m = _KEY_VALUE.match(raw)
        if not m:
            continue
        key = " ".join(m.group(1).lower().split())
        if not (set(key.split()) & _FACT_KEYS):
            continue
        out.setdefault(key, (m.group(2).strip().strip("*").strip(), raw.strip()))
    return out


def _overlap(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def _fmt(value: float) -> str:
    return f"{value:g}"


# ---------------------------------------------------------------------------------------------
# The pass


def fingerprint(*parts: object) -> str:
    text = "\x1f".join(" ".join(str(p or "").lower().split()) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def propose(docs: list[Doc], memories: list[Mem]) -> list[dict[str, Any]]:
    """Every candidate for these documents against these memories (deterministic order)."""
    out: list[dict[str, Any]] = []
    mem_words = [(m, words(m.title + " " + m.body)) for m in memories]
    mem_quantities = {m.id: quantities(m.title + ". " + m.body) for m in memories}
    mem_kv = {m.id: key_values(m.body) for m in memories}
    mem_sentences = {m.id: sentences(m.body) for m in memories}
    for doc in docs:
        doc_out: list[dict[str, Any]] = []
        if doc.text:
            doc_words = words(doc.name + " " + doc.text)
            related = [m for m, w in mem_words if len(w & doc_words) >= 2]
            doc_out += _conflicts(doc, related, mem_quantities, mem_kv, mem_sentences)
            doc_out += _retirements(doc, related)
            doc_out += _open_loops(doc)
            doc_out += _workflows(doc)
            doc_out += _corrections(doc)
            doc_out += _facts(doc)
        if doc.replaced:
            doc_out += _stale(doc, memories)
        out += doc_out
    seen: set[str] = set()
    unique = []
    for cand in out:
        if cand["fingerprint"] not in seen:
            seen.add(cand["fingerprint"])
            unique.append(cand)
    return unique[:MAX_CANDIDATES_PER_RUN]


def _cand(
    kind: str,
    doc: Doc,
    *,
    title: str,
    statement: str,
    rationale: str,
    evidence: list[dict[str, Any]],
    confidence: float,
    memory_kind: str,
    supersedes: str | None = None,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "title": safe_title(title),
        "statement": statement.strip(),
        "rationale": rationale,
        "evidence": evidence,
        "confidence": round(max(0.05, min(0.95, confidence)), 2),
        "box_id": doc.box_id,
        "version": doc.version,
        "url": doc.url,
        "memory_kind": memory_kind,
        "supersedes": supersedes,
        # What was found, not how it is worded: a rename of the same version proposes nothing new.
        "fingerprint": fingerprint(
            kind, doc.box_id, doc.version, supersedes, *(e["excerpt"] for e in evidence)
        ),
    }


def _conflicts(
    doc: Doc,
    related: list[Mem],
    mem_quantities: dict[str, list[Quantity]],
    mem_kv: dict[str, dict[str, tuple[str, str]]],
    mem_sentences: dict[str, list[str]],
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    doc_q = quantities(doc.text)
    doc_kv = key_values(doc.text)
    doc_sentences = sentences(doc.text)
    for mem in related:
        found: tuple[str, str, str, float] | None = None  # (doc sentence, memory sentence, why, strength)
        for mq in mem_quantities[mem.id]:
            same = [
                dq
                for dq in doc_q
                if dq.unit == mq.unit
                and _overlap(dq.subject, mq.subject) >= 0.5
                and len(dq.subject & mq.subject) >= 2
            ]
            if not same:
                continue
            if any(dq.value == mq.value for dq in same):
                continue  # the document also states the memory's value: no contradiction
            best = max(same, key=lambda dq: _overlap(dq.subject, mq.subject))
            why = f"{_fmt(best.value)} {best.unit} in the document, {_fmt(mq.value)} {mq.unit} in the memory"
            found = (best.sentence, mq.sentence, why, _overlap(best.subject, mq.subject))
            break
        if found is None:
            for key, (value, line) in doc_kv.items():
                if key in mem_kv[mem.id]:
                    mem_value, mem_line = mem_kv[mem.id][key]
                    if mem_value.casefold() != value.casefold():
                        found = (
                            line,
                            mem_line,
                            f"'{key}' is {value!r} in the document, {mem_value!r} in the memory",
                            0.6,
                        )
                        break
        if found is None:
            found = _negated(doc_sentences, mem_sentences[mem.id])
        if found is None:
            continue
        doc_sentence, mem_sentence, why, strength = found
        statement = (
            f"According to the Box file {doc.name}: {doc_sentence}\n\n"
            f"This supersedes the earlier memory [[{mem.title}]], which said: {mem_sentence}"
        )
        out.append(
            _cand(
                "conflict",
                doc,
                title=mem.title,
                statement=statement,
                rationale=f"{doc.name} contradicts the active memory '{mem.title}' ({mem.id}): {why}.",
                evidence=[doc.evidence(doc_sentence), mem.evidence(mem_sentence)],
                confidence=0.55 + 0.3 * min(1.0, strength),
                memory_kind=mem.kind,
                supersedes=mem.id,
            )
        )
        if len(out) >= MAX_PER_DOC["conflict"]:
            break
    return out


def _negated(doc_sentences: list[str], mem_sentences: list[str]) -> tuple[str, str, str, float] | None:
    """The same statement with and without a negation (`is allowed` / `is not allowed`)."""
    for ds in doc_sentences:
        d_all = set(_WORD.findall(ds.lower()))
        d_words = words(ds) - _NEGATIONS
        if len(d_words) < 3:
            continue
        for ms in mem_sentences:
            m_all = set(_WORD.findall(ms.lower()))
            m_words = words(ms) - _NEGATIONS
            if len(m_words) < 3 or len(d_words & m_words) / len(d_words | m_words) < 0.6:
                continue
            if bool(d_all & _NEGATIONS) != bool(m_all & _NEGATIONS):
                return ds, ms, "the same statement is negated in one of them", 0.5
    return None


def _open_loops(doc: Doc) -> list[dict[str, Any]]:
    items: list[str] = []
    for raw in doc.text.splitlines():
        m = _UNCHECKED.match(raw)
        line = m.group(1) if m else (raw if _LOOP_MARK.search(raw) else None)
        if line is None:
            continue
        item = clean_name(line.strip().lstrip("#>*-+ ").strip(), 200)
        if item and item not in items:
            items.append(item)
        if len(items) >= 10:
            break
    if not items:
        return []
    statement = f"Open items in the Box file {doc.name}:\n" + "\n".join(f"- [ ] {i}" for i in items)
    return [
        _cand(
            "open_loop",
            doc,
            title=f"Open loops in {_stem(doc.name)}",
            statement=statement,
            rationale=f"{doc.name} has {len(items)} unresolved item(s): TODO/TBD, open boxes, follow-ups.",
            evidence=[doc.evidence(i) for i in items[:3]],
            confidence=0.5 + 0.05 * min(len(items), 6),
            memory_kind="task",
        )
    ]


def _sentence_matches(
    doc: Doc,
    kind: str,
    pattern: re.Pattern[str],
    *,
    label: str,
    says: str,
    confidence: float | Callable[[str], float],
    memory_kind: str,
) -> list[dict[str, Any]]:
    """One candidate per sentence of `doc` that `pattern` finds (at most MAX_PER_DOC[kind])."""
    out: list[dict[str, Any]] = []
    for s in sentences(doc.text):
        m = pattern.search(s)
        if not m or len(s) < 20:
            continue
        out.append(
            _cand(
                kind,
                doc,
                title=f"{label}: {s[:90]}",
                statement=f"{s} (from the Box file {doc.name})",
                rationale=f"{doc.name} {says} ('{m.group(0)}').",
                evidence=[doc.evidence(s)],
                confidence=confidence(s) if callable(confidence) else confidence,
                memory_kind=memory_kind,
            )
        )
        if len(out) >= MAX_PER_DOC[kind]:
            break
    return out


def _workflows(doc: Doc) -> list[dict[str, Any]]:
    return _sentence_matches(
        doc,
        "workflow",
        _CADENCE,
        label="Recurring",
        says="describes a recurring process",
        confidence=lambda s: 0.6 + (0.1 if len(words(s)) >= 4 else 0.0),
        memory_kind="note",
    )


def _corrections(doc: Doc) -> list[dict[str, Any]]:
    return _sentence_matches(
        doc,
        "correction",
        _CORRECTION,
        label="Correction",
        says="states a correction or replacement",
        confidence=0.55,
        memory_kind="fact",
    )


def _facts(doc: Doc) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key, (value, line) in key_values(doc.text).items():
        out.append(
            _cand(
                "fact",
                doc,
                title=f"{_stem(doc.name)}: {key}",
                statement=f"{key.capitalize()}: {value} (from the Box file {doc.name})",
                rationale=f"{doc.name} states its {key} explicitly.",
                evidence=[doc.evidence(line)],
                confidence=0.55,
                memory_kind="fact",
            )
        )
        if len(out) >= MAX_PER_DOC["fact"]:
            return out
    for s in sentences(doc.text):
        if _DECISION.search(s):
            out.append(
                _cand(
                    "fact",
                    doc,
                    title=f"{_stem(doc.name)}: {s[:80]}",
                    statement=f"{s} (from the Box file {doc.name})",
                    rationale=f"{doc.name} records a decision.",
                    evidence=[doc.evidence(s)],
                    confidence=0.65,
                    memory_kind="decision",
                )
            )
            if len(out) >= MAX_PER_DOC["fact"]:
                break
    return out


def _retirements(doc: Doc, related: list[Mem]) -> list[dict[str, Any]]:
    """Archive candidates: a sentence of the document retires what a memory is about (the
    sentence says "retired", "deprecated", "no longer used"... and holds the memory's title words)."""
    out: list[dict[str, Any]] = []
    for sentence in sentences(doc.text):
        if not _RETIRED.search(sentence):
            continue
        said = words(sentence)
        for mem in related:
            title = words(mem.title)
            if not title or len(title & said) < min(2, len(title)):
                continue
            statement = (
                f"Archive the memory [[{mem.title}]] ({mem.id}): {doc.name} says it no longer holds: "
                f'"{_excerpt(sentence)}"'
            )
            out.append(
                _cand(
                    "archive",
                    doc,
                    title=f"Archived: {mem.title}",
                    statement=statement,
                    rationale=f"{doc.name} retires what the memory '{mem.title}' is about.",
                    evidence=[doc.evidence(sentence), mem.evidence(mem.body)],
                    confidence=0.6,
                    memory_kind=mem.kind,
                    supersedes=mem.id,
                )
            )
            if len(out) >= MAX_PER_DOC["archive"]:
                return out
    return out


def _stale(doc: Doc, memories: list[Mem]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for mem in memories:
        cited = [s for s in mem.sources if s.get("type") == "box_file" and str(s.get("ref")) == doc.box_id]
        if not cited:
            continue
        old = cited[0].get("version")
        if old is not None and doc.version is not None and str(old) == str(doc.version):
            continue
        change = f" (version {old} -> {doc.version})" if old else ""
        statement = (
            f"Re-check the memory [[{mem.title}]] ({mem.id}): the Box file {doc.name} it cites changed"
            f"{change}. Re-read the file and supersede the memory if it no longer holds."
        )
        out.append(
            _cand(
                "stale_policy",
                doc,
                title=f"Re-check {mem.title}",
                statement=statement,
                rationale=f"The memory '{mem.title}' cites {doc.name}, which changed since it was written.",
                evidence=[doc.evidence(doc.text[:EXCERPT] or doc.name), mem.evidence(mem.body)],
                confidence=0.7,
                memory_kind="task",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# Workspace side


def workspace_memories(ws: Any) -> list[Mem]:
    """Active memories of a workspace (bodies read through its store; companions left out)."""
    from box_memory.format.model import IndexEntry
    from box_memory.workspace.index import load_all, read_memory

    out: list[Mem] = []
    for idx in load_all(ws):
        for e in idx.entries:
            if e.get("status") != "active" or e.get("kind") == "companion":
                continue
            path = IndexEntry(idx.folder, e).path
            try:
                mem = read_memory(ws, path)
            except Exception:  # noqa: S112 - an unreadable memory is index-rebuild's business
                continue
            sources = mem.meta.get("sources") or []
            out.append(
                Mem(
                    id=mem.id,
                    title=mem.title,
                    kind=mem.kind,
                    body=mem.body,
                    sources=[s for s in sources if isinstance(s, dict)] if isinstance(sources, list) else [],
                )
            )
            if len(out) >= MAX_MEMORIES:
                return out
    return out


def memory_request(cand: dict[str, Any], *, supersedes: str | None, team: str | None) -> Any:
    """The WriteRequest that accepting a candidate makes (append-only; sources carry url+version)."""
    from box_memory.write.memories import WriteRequest

    lines = [cand["statement"], "", "Evidence:"]
    for ev in cand["evidence"]:
        if "memory_id" in ev:
            lines.append(f'- memory {ev["memory_id"]} ({ev["memory_title"]}): "{ev["excerpt"]}"')
        else:
            lines.append(f'- {ev["file"]} ({ev.get("url") or ev.get("path")}): "{ev["excerpt"]}"')
    lines += [
        "",
        f"Proposed by the Box Brain review ({cand['kind']}, confidence {cand['confidence']:g}): "
        f"{cand['rationale']}",
    ]
    source: dict[str, Any] = {"type": "box_file", "ref": cand.get("box_id")}
    if cand.get("url"):
        source["url"] = cand["url"]
    if cand.get("version"):
        source["version"] = cand["version"]
    kind = cand.get("memory_kind") or "note"
    if kind not in ("decision", "fact", "task", "observation", "reference", "note"):
        kind = "note"
    return WriteRequest(
        content="\n".join(lines),
        title=cand["title"],
        kind=kind,
        # Accepting an archive candidate retires the memory: the superseding memory is archived.
        status="archived" if cand["kind"] == "archive" else "active",
        tags=["box-brain", cand["kind"].replace("_", "-")],
        team=team,
        supersedes=supersedes,
        confidence=float(cand["confidence"]),
        agent="box-memory brain review",
        sources=[f"box_file:{cand.get('box_id')}"],
        extra_meta={"sources": [source]},
    )


# ---------------------------------------------------------------------------------------------
# accept / reject


def accept(store: Any, cand_id: int, ws: Any, *, team: str | None = None) -> Result:
    """Write the candidate as an append-only memory in `ws`; the candidate becomes accepted.

    A conflict supersedes the memory it contradicts. Accepting a newer candidate of the same kind
    about the same file supersedes the memory written for the previous one, when still active.
    """
    from box_memory.errors import InvalidInput, NotFound
    from box_memory.recall.service import lookup
    from box_memory.write.memories import write_memory

    cand = store.candidate(cand_id)
    if cand["status"] != "proposed":
        raise InvalidInput(f"review candidate {cand_id} is already {cand['status']}")
    supersedes = cand.get("supersedes")
    if not supersedes:
        previous = store.accepted_memory_for(cand["kind"], cand.get("box_id"), cand["source_id"])
        if previous:
            try:
                links = lookup(ws, previous)[1]
            except NotFound:
                links = []
            if any(link["id"] == previous and link["status"] == "active" for link in links):
                supersedes = previous
    written = write_memory(ws, memory_request(cand, supersedes=supersedes, team=team))
    store.decide(cand_id, "accepted", written.data["id"])
    return Result({"candidate": store.candidate(cand_id), "memory": written.data}, warnings=written.warnings)


def edit(store: Any, cand_id: int, *, title: str | None = None, statement: str | None = None) -> Result:
    """Change a proposed candidate's title and/or statement before it is accepted."""
    from box_memory.errors import InvalidInput
    from box_memory.format.ids import validate_title

    cand = store.candidate(cand_id)
    if cand["status"] != "proposed":
        raise InvalidInput(
            f"review candidate {cand_id} is already {cand['status']}; only a proposed one is edited"
        )
    new_title = validate_title(title) if title is not None else cand["title"]
    new_statement = statement.strip() if statement is not None else cand["statement"]
    if not new_statement:
        raise InvalidInput("the statement must not be empty")
    if len(new_statement) > 20000:
        raise InvalidInput("the statement is longer than 20000 characters")
    store.update_candidate(cand_id, title=new_title, statement=new_statement)
    return Result({"candidate": store.candidate(cand_id)})


def reject(store: Any, cand_id: int) -> Result:
    """Mark a candidate rejected; nothing is written anywhere else (it is not proposed again)."""
    from box_memory.errors import InvalidInput

    cand = store.candidate(cand_id)
    if cand["status"] != "proposed":
        raise InvalidInput(f"review candidate {cand_id} is already {cand['status']}")
    store.decide(cand_id, "rejected")
    return Result({"candidate": store.candidate(cand_id)})
