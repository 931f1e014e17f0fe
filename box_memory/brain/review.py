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

This module is the pass itself (`propose` and its heuristics); `review_text` reads the text,
`review_workspace` reads the memories and writes what a person accepts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from box_memory.brain.entry import clean_name
from box_memory.brain.review_text import (
    EXCERPT,
    WORD,
    Doc,
    Mem,
    Quantity,
    clipped,
    fmt,
    key_values,
    overlap,
    quantities,
    safe_title,
    sentences,
    stem,
    words,
)

REVIEW_EVERY_S = 6 * 3600
MAX_CANDIDATES_PER_RUN = 50
MAX_PER_DOC = {"fact": 3, "workflow": 3, "open_loop": 1, "correction": 2, "conflict": 5, "archive": 3}
_RETIRED = re.compile(
    r"\b(?:is|are|was|were|has been|have been|will be|got)\s+(?:now\s+)?(?:retired|deprecated|decommissioned|"
    r"sunset|discontinued|withdrawn|obsolete|shut down|turned off|abandoned)\b"
    r"|\bno longer (?:used|in use|supported|applies|apply|valid|in effect|maintained)\b",
    re.I,
)


_NEGATIONS = frozenset({"not", "no", "never", "without", "prohibited", "forbidden", "disallowed", "banned"})
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
                and overlap(dq.subject, mq.subject) >= 0.5
                and len(dq.subject & mq.subject) >= 2
            ]
            if not same:
                continue
            if any(dq.value == mq.value for dq in same):
                continue  # the document also states the memory's value: no contradiction
            best = max(same, key=lambda dq: overlap(dq.subject, mq.subject))
            why = f"{fmt(best.value)} {best.unit} in the document, {fmt(mq.value)} {mq.unit} in the memory"
            found = (best.sentence, mq.sentence, why, overlap(best.subject, mq.subject))
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
        d_all = set(WORD.findall(ds.lower()))
        d_words = words(ds) - _NEGATIONS
        if len(d_words) < 3:
            continue
        for ms in mem_sentences:
            m_all = set(WORD.findall(ms.lower()))
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
            title=f"Open loops in {stem(doc.name)}",
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
                title=f"{stem(doc.name)}: {key}",
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
                    title=f"{stem(doc.name)}: {s[:80]}",
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
                f'"{clipped(sentence)}"'
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
