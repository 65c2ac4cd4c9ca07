"""LongMemEval-S retrieval, official protocol (Wu et al., ICLR 2025).

Every question has its own haystack of timestamped sessions. Keys are the
user turns only; gold turns are the user turns marked ``has_answer``; gold
sessions are the sessions holding them. Systems rank turns; the session
ranking is the sessions in the order of their best turn (LongMemEval's
turn-to-session evaluation). Metrics: ``recall_all@k`` (every gold item in
the top k) and ``ndcg_any@k`` (binary nDCG with LongMemEval's own DCG).
Abstention questions (``_abs``) and questions whose evidence is only on
the assistant side are not scored.

Each haystack is ingested into chatrecall as one fresh user (session dates
as timestamps, the clock set to the question date), queried, then forgotten.
"""

from __future__ import annotations

import gzip
import json
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ._common import (
    mean,
    ndcg_official,
    open_harness,
    progress,
    rank_haystack,
    systems_to_run,
    target,
)

__all__ = ["LMEQuestion", "load_longmemeval", "parse_lme_date", "run_longmemeval", "score_ranking"]

KS = (5, 10)
METRICS = ("session_recall_all@5", "session_recall_all@10", "session_ndcg_any@10",
           "turn_recall_all@5", "turn_recall_all@10", "turn_ndcg_any@10")


def parse_lme_date(s: str) -> float:
    """``"2023/05/20 (Sat) 02:21"`` -> POSIX seconds (read as UTC)."""
    s = " ".join(str(s).split())
    for fmt in ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y/%m/%d"):
        try:
            return datetime.strptime(s, fmt).replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
    raise ValueError(f"unparseable LongMemEval date {s!r}")


@dataclass
class LMEQuestion:
    qid: str
    qtype: str
    question: str
    now: float
    keys: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    meta: list[dict[str, Any]] = field(default_factory=list)
    gold_turns: set[str] = field(default_factory=set)
    gold_sessions: set[str] = field(default_factory=set)


def _read(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        return json.load(fh)  # type: ignore[no-any-return]


def lme_sessions(rec: Mapping[str, Any]) -> list[tuple[str, float, list[dict[str, Any]]]]:
    """A record's haystack sessions in file order as ``(session id, timestamp, turns)``; an id that repeats
    gets a ``~n`` suffix so sessions stay distinct."""
    out = []
    seen: dict[str, int] = {}
    for sid, date, sess in zip(rec["haystack_session_ids"], rec["haystack_dates"], rec["haystack_sessions"]):
        sid = str(sid)
        if sid in seen:
            seen[sid] += 1
            sid = f"{sid}~{seen[sid]}"
        else:
            seen[sid] = 0
        out.append((sid, parse_lme_date(date), sess))
    return out


def load_longmemeval(path: str | Path, limit: int | None = None, *,
                     assistant_turns: bool = False) -> tuple[list[LMEQuestion], dict[str, int]]:
    """Scorable questions (first ``limit`` records) and counts of the skipped ones.

    The official protocol indexes the user's turns only; ``assistant_turns=True`` indexes every turn, as a chatbot
    stores them (the gold stays the user's evidence turns).
    """
    data = _read(path)
    if limit:
        data = data[:limit]
    out: list[LMEQuestion] = []
    skipped = {"abstention": 0, "assistant_only_evidence": 0}
    for rec in data:
        qid = str(rec["question_id"])
        if qid.endswith("_abs"):
            skipped["abstention"] += 1
            continue
        q = LMEQuestion(qid=qid, qtype=str(rec["question_type"]), question=str(rec["question"]),
                        now=parse_lme_date(rec.get("question_date") or rec["haystack_dates"][-1]))
        for sid, ts, sess in lme_sessions(rec):
            for i, turn in enumerate(sess):
                role = str(turn.get("role"))
                if (role != "user" and not assistant_turns) or not str(turn.get("content", "")).strip():
                    continue
                key = f"{sid}#{i}"
                q.keys.append(key)
                q.texts.append(str(turn["content"]))
                q.meta.append({"session_id": sid, "role": role, "timestamp": ts + 60.0 * i})
                if turn.get("has_answer") and role == "user":
                    q.gold_turns.add(key)
                    q.gold_sessions.add(sid)
        if not q.gold_turns:
            skipped["assistant_only_evidence"] += 1
            continue
        out.append(q)
    return out, skipped


def score_ranking(ranked_turns: Sequence[str], gold_turns: set[str], gold_sessions: set[str]) -> dict[str, float]:
    """All metrics of one question from a turn ranking (keys ``"<session>#<i>"``)."""
    sessions = list(dict.fromkeys(k.rsplit("#", 1)[0] for k in ranked_turns))
    out: dict[str, float] = {}
    for level, ranked, gold in (("turn", list(ranked_turns), gold_turns), ("session", sessions, gold_sessions)):
        for k in KS:
            top = set(ranked[:k])
            out[f"{level}_recall_all@{k}"] = float(all(g in top for g in gold))
            out[f"{level}_recall_any@{k}"] = float(any(g in top for g in gold))
        out[f"{level}_ndcg_any@10"] = ndcg_official([int(x in gold) for x in ranked[:10]], len(gold), 10)
    return out


def run_longmemeval(
    path: str | Path,
    *,
    limit: int | None = None,
    systems: str | Sequence[str] | None = None,
    store: str = "chroma",
    embedder: Any = None,
    console: Any = None,
    depth: int = 100,
) -> dict[str, Any]:
    """Run the LongMemEval-S benchmark; returns the result dict.

    Args:
        path: ``longmemeval_s*.json`` or ``.json.gz``.
        limit: Only the first N records (before skipping unscorable ones).
        systems: Names or a comma-separated string (default: all).
        store: ``chroma`` (embedded ChromaStore in a temp dir) or ``memory``.
        embedder: An Embedder (default: bundled MiniLM, vectors cached on disk).
        depth: Turns ranked per question (enough for 10 distinct sessions).
    """
    names = systems_to_run(systems)  # before any data is read or embedded
    questions, skipped = load_longmemeval(path, limit)
    harness = open_harness(names, store=store, embedder=embedder)
    emb, clock, engine, store_desc = harness.emb, harness.clock, harness.engine, harness.store_desc
    rows: dict[str, list[tuple[str, dict[str, float]]]] = {n: [] for n in names}
    secs: dict[str, float] = defaultdict(float)
    t_start = time.perf_counter()
    with progress(console) as prog:
        task = prog.add_task("LongMemEval", total=len(questions))
        for q in questions:
            prog.update(task, description=f"LongMemEval {q.qid}: {len(q.texts)} user turns")
            clock.t = q.now
            ranked = rank_haystack(names, engine, emb, f"lme-{q.qid}", q.keys, q.texts, q.meta, [q.question],
                                   depth, secs)
            for n in names:
                rows[n].append((q.qtype, score_ranking(ranked[n][0], q.gold_turns, q.gold_sessions)))
            prog.advance(task)
            if prog.tasks[task].completed % 10 == 0:
                emb.save()
    harness.close()

    types = sorted({q.qtype for q in questions})
    results: dict[str, dict[str, float]] = {}
    for n, per_q in rows.items():
        m: dict[str, float] = {}
        allkeys = list(per_q[0][1]) if per_q else list(METRICS)
        for key in allkeys:
            m[key] = mean(r[key] for _, r in per_q)
        for t in types:
            sub = [r for qt, r in per_q if qt == t]
            for key in METRICS:
                m[f"{key}_{t}"] = mean(r[key] for r in sub)
        m["questions"] = float(len(per_q))
        m["ms_per_query"] = 1e3 * secs[n] / max(len(per_q), 1)
        results[n] = m

    result: dict[str, Any] = {
        "benchmark": "longmemeval",
        "title": "LongMemEval-S retrieval (official protocol)",
        "description": (
            f"{len(questions)} scored questions of {Path(path).name}; keys = user turns; session ranking = "
            "sessions by their best turn. Same embedder (bundled all-MiniLM-L6-v2) for every system. "
            "chatrecall store: " + store_desc + "."
        ),
        "dataset": {"path": str(path), "scored_questions": len(questions), "skipped": skipped,
                    "types": {t: sum(q.qtype == t for q in questions) for t in types},
                    "user_turns_per_question": mean(len(q.keys) for q in questions)},
        "store": store_desc,
        "systems": results,
        "seconds": round(time.perf_counter() - t_start, 1),
    }
    main_cols = [*METRICS, "ms_per_query"]
    result["tables"] = [
        {"title": "LongMemEval-S retrieval (overall)", "columns": main_cols,
         "rows": [{"system": n, **m} for n, m in results.items()]},
    ]
    for metric in ("session_recall_all@5", "turn_recall_all@10"):
        result["tables"].append({
            "title": f"{metric} per question type", "columns": types,
            "note": "questions per type: " + ", ".join(f"{t} {result['dataset']['types'][t]}" for t in types),
            "rows": [{"system": n, **{t: m[f"{metric}_{t}"] for t in types}} for n, m in results.items()],
        })
    targets = []
    if "chatrecall" in results:
        targets.append(target("LongMemEval session recall_all@5 (chatrecall)", ">=", 0.97,
                              results["chatrecall"]["session_recall_all@5"]))
        targets.append(target("LongMemEval turn recall_all@10 (chatrecall)", ">=", 0.85,
                              results["chatrecall"]["turn_recall_all@10"]))
    result["targets"] = targets
    result["notes"] = [
        f"Skipped: {skipped['abstention']} abstention, {skipped['assistant_only_evidence']} with evidence only "
        "in assistant turns (single-session-assistant type).",
        "nDCG uses LongMemEval's eval_utils DCG (rank 1 undiscounted, rank i>=2 divided by log2(i)).",
        f"Embedding: {emb.doc_misses} user-turn texts embedded by the model, {emb.doc_hits} lookups answered from the cache (this run or an earlier one).",
    ]
    return result

