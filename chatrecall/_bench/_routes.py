"""Gate evaluation with tune / validation splits.

Two kinds of labelled data:

* 4-way route labels (``none`` / ``memory`` / ``corpus`` / ``both``) on messages
  written for this project (``benchmarks/data/gate_messages_*.jsonl``): one file
  to tune on, one written independently before the gate changed and never tuned
  on (validation).
* Binary "needs memory" labels from TREC CAsT (``needs_history``) and iKAT 2023
  (``needs_ptkb_memory`` or ``needs_dialog_history``), split by year / part:
  CAsT 2019-2020 and iKAT train are the tune split, CAsT 2021-2022 and iKAT test
  are validation.

:func:`run_routes` scores a gate on every split and reports which split each
number comes from, so only validation numbers are quoted as held out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chatrecall.core import Gate, InvalidInputError

__all__ = [
    "CAST_SPLITS",
    "MESSAGE_FILES",
    "IKAT_SPLITS",
    "LabelledMessage",
    "load_messages",
    "load_split",
    "gate_timing",
    "route_metrics",
    "binary_metrics",
    "render_markdown",
    "run_routes",
]

_ROUTES = ("none", "memory", "corpus", "both")
#: Which CAsT / iKAT parts tune the gate and which validate it.
CAST_SPLITS: Mapping[str, tuple[str, ...]] = {
    "tune": ("cast2019", "cast2020"),
    "validation": ("cast2021", "cast2022"),
}
IKAT_SPLITS: Mapping[str, tuple[str, ...]] = {
    "tune": ("ikat2023_train",),
    "validation": ("ikat2023_test",),
}
_REPO = Path(__file__).resolve().parents[2]
MESSAGE_FILES: Mapping[str, tuple[Path, ...]] = {
    "tune": (_REPO / "benchmarks" / "data" / "gate_messages_tune.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune2.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune3.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune4.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune5.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune6.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune7.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune8.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune9.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune10.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune11.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune12.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune13.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune14.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune15.jsonl",
             # 16 and 17 were the blind sets of the previous release (reported, never tuned on): they joined
             # the tune split once the new blind set 20 was committed
             _REPO / "benchmarks" / "data" / "gate_messages_tune16.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune17.jsonl",
             # written by the developer, not a helper: casual reactions that name someone ("lol she always
             # does that"), facts handed over, advice about the user's own things, bare personal questions
             _REPO / "benchmarks" / "data" / "gate_messages_tune21.jsonl",
             # two more independent writers (never saw patterns or other sets), asked for many mixed
             # questions naming the user's own pet or child and casual reactions naming someone
             _REPO / "benchmarks" / "data" / "gate_messages_tune22.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune23.jsonl",
             # written by the developer after a new-user chat found "list everything you know about the
             # Lisbon trip" routed to no search: requests not phrased as questions (set 24)
             _REPO / "benchmarks" / "data" / "gate_messages_tune24.jsonl",
             # two more independent writers (never saw patterns or other sets), asked for rhetorical
             # questions and reactions naming someone, requests, and advice about a named pet or child;
             # joined by leave-one-set-out on the tune split (tune_gate.py --compare-sets: 0.9414 -> 0.9433)
             _REPO / "benchmarks" / "data" / "gate_messages_tune26.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune27.jsonl",
             # and two more, asked for look-alike pairs (a personal question shaped like a general one and its
             # general twin) and small-talk questions to the bot (tune_gate.py --compare-sets: 0.9442 -> 0.9455)
             _REPO / "benchmarks" / "data" / "gate_messages_tune28.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune29.jsonl",
             # and two more, asked for requests not phrased as questions in all four routes and for the line
             # between casual messages and real questions (tune_gate.py --compare-sets: 0.9445 -> 0.9475)
             _REPO / "benchmarks" / "data" / "gate_messages_tune30.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune31.jsonl",
             # recommendations fitted to the user's own tastes, often only implied ("suggest a show I'd enjoy"),
             # and their generic twins; written after the replay found "recommend some publications I might
             # find interesting" routed to the corpus alone (tune_gate.py --compare-sets: 0.9437 -> 0.9443)
             _REPO / "benchmarks" / "data" / "gate_messages_tune32.jsonl",
             # two more independent writers, asked for casual messages shaped as questions (rhetorical,
             # venting, to the bot) with their real-question twins, and personal questions shaped like
             # general ones: forms the tune sets hardly held (51 casual questions in 7,644). Each held out,
             # trained with the other: 0.862 -> 0.881 and 0.827 -> 0.877; the 28 tune sets 0.9401 -> 0.9399;
             # all 30 sets 0.9337 -> 0.9358 (tune_gate.py --compare-sets)
             _REPO / "benchmarks" / "data" / "gate_messages_tune35.jsonl",
             _REPO / "benchmarks" / "data" / "gate_messages_tune36.jsonl"),
    "validation": (_REPO / "benchmarks" / "data" / "gate_messages_validation.jsonl",),
    # written blind (the writer saw neither patterns nor other sets) and committed before the combiner
    # was retrained on sets 16, 17 and 21; never tuned on (set 20 of the helpers' series)
    "blind": (_REPO / "benchmarks" / "data" / "gate_messages_blind20.jsonl",),
    # requests not phrased as questions ("tell me about my sister", "list the noble gases"), written blind by
    # a helper and committed before the request patterns were written; never tuned on (set 25)
    "requests": (_REPO / "benchmarks" / "data" / "gate_messages_blind25.jsonl",),
    # two more independent writers (memory questions shaped like general ones; casual messages shaped like
    # questions); tune_gate.py --compare-sets found they would not help as tune sets (leave-one-set-out
    # 0.9401 -> 0.9393), so they are held out instead, never tuned on (sets 33 and 34)
    "blind2": (_REPO / "benchmarks" / "data" / "gate_messages_blind33.jsonl",
               _REPO / "benchmarks" / "data" / "gate_messages_blind34.jsonl"),
    # two more independent writers (the first message of a new session naming the user's own thing only by a
    # pronoun or "the X", "is it safe to take him for his walk?", with general twins, memory-only questions
    # and casual reactions of the same shapes). tune_gate.py --compare-sets accepted them (each held out and
    # trained with the other 0.8115 -> 0.8423 / 0.8500; the 30 tune sets 0.9358 -> 0.9363), but the gate
    # retrained with them broke two behaviour tests ("remember how kubernetes schedules pods onto nodes?" ->
    # none, "What are its symptoms?" -> corpus), so it did not ship and they are held out instead (sets 37, 38)
    "blind3": (_REPO / "benchmarks" / "data" / "gate_messages_blind37.jsonl",
               _REPO / "benchmarks" / "data" / "gate_messages_blind38.jsonl"),
    # two more independent writers (helpers who saw no code, no pattern and no other set), asked for the
    # project's four routes in realistic proportions with their boundary cases; committed (cf6eeb4) before any
    # run on them, their texts unread; never tuned on (sets 39 and 40)
    "blind4": (_REPO / "benchmarks" / "data" / "gate_messages_blind39.jsonl",
               _REPO / "benchmarks" / "data" / "gate_messages_blind40.jsonl"),
    # two more independent writers (helpers who read no file of the project), asked for personal questions that
    # also need a rule or a document ("my flight was 4 hours late, what am I owed?") with personal look-alikes,
    # general twins and casual turns, after four new-user chats met such questions routed to memory alone.
    # Written as tune sets, but the combiner retrained with them failed its criterion (validation,
    # blind2, blind memory recall and CAsT fell; the closing note of stop 25), so they are held out instead:
    # the shipped combiner never saw them (they were read only through that run's aggregate figures)
    "mixed": (_REPO / "benchmarks" / "data" / "gate_messages_mixed41.jsonl",
              _REPO / "benchmarks" / "data" / "gate_messages_mixed42.jsonl"),
    # two more independent writers (helpers who read no project file), asked for look-alikes on the corpus side
    # (personal questions and statements in technical words beside general twins; running chats of 25 personas).
    # tune_gate.py --compare-sets accepted them (the 30 tune sets 0.9358 -> 0.9365; all 32 sets, each held out,
    # 0.9328 -> 0.9337), but the combiner retrained with them failed its criterion (stop 33, C19: requests 0.930 ->
    # 0.913, over the 0.01 allowed; validation rose 0.942 -> 0.954), so it did not ship and they are held out
    # instead (sets 43 and 44; read only through that run's aggregate figures)
    "blind5": (_REPO / "benchmarks" / "data" / "gate_messages_blind43.jsonl",
               _REPO / "benchmarks" / "data" / "gate_messages_blind44.jsonl"),
    # two more independent writers (helpers who read no file of the project), asked for the four routes in
    # realistic proportions with hard look-alikes (personal questions in general words beside their general
    # twins, idiomatic "my", "Actually ..." / "Update: ..." statements, news with a general question), one on
    # everyday life, one on work and study; committed before any run on them, never tuned on (sets 45 and 46)
    "blind6": (_REPO / "benchmarks" / "data" / "gate_messages_blind45.jsonl",
               _REPO / "benchmarks" / "data" / "gate_messages_blind46.jsonl"),
    # two more independent writers (helpers who read no file of the project, stop 41), asked for the four routes
    # in realistic proportions with conditional questions about the user's own plans and their general twins,
    # statements opening with a pronoun or a name, greetings with weather or mood, personal questions without
    # recall words, casual questions, idiomatic "my"; one on everyday life, one on work and study; committed
    # before any run on them and before the stop's gate changes, never tuned on (sets 47 and 48)
    "blind7": (_REPO / "benchmarks" / "data" / "gate_messages_blind47.jsonl",
               _REPO / "benchmarks" / "data" / "gate_messages_blind48.jsonl"),
    # three independent writers (helpers who read no project file, stop 50), one brief: the line between follow-ups
    # on the conversation ("why does that function return None?") and standalone document questions with the same
    # words, with both / none look-alikes. 50 and 51 were written as tune sets: tune_gate.py --compare-sets accepted
    # them (each held out, trained with the other 0.833 -> 0.877 / 0.837 -> 0.887; the 30 tune sets 0.9361 ->
    # 0.9351), but the combiner retrained with them failed its criterion (8, then 3 behaviour tests failed;
    # docs/benchmarks.md, "G2"), so they are held out instead. 52 was committed before any run on it. The shipped
    # combiner never saw them (sets 50, 51, 52)
    "blind8": (_REPO / "benchmarks" / "data" / "gate_messages_blind50.jsonl",
               _REPO / "benchmarks" / "data" / "gate_messages_blind51.jsonl",
               _REPO / "benchmarks" / "data" / "gate_messages_blind52.jsonl"),
    # the 80 questions of the corpus-context benchmark (benchmarks/data/corpus_context: two writers who saw
    # no code), each about the user's own situation and needing a document, so labelled "both" (kind
    # "mixed"); scored as they were written; never tuned on
    "context": (_REPO / "benchmarks" / "data" / "corpus_context" / "set_a.json",
                _REPO / "benchmarks" / "data" / "corpus_context" / "set_b.json"),
}


def load_split(split: str) -> list[LabelledMessage]:
    """Every labelled message of a split (a key of :data:`MESSAGE_FILES`: ``tune`` or a held-out one).

    The sets were written independently, so a few short messages ("ok", "lol")
    occur in several: a held-out split drops every text the tune split holds
    (case-insensitive), so nothing tuned on is ever scored as held out.
    """
    msgs = [m for path in MESSAGE_FILES[split] if path.exists() for m in load_messages(path)]
    if split != "tune":
        seen = {m.text.casefold() for m in load_split("tune")}
        msgs = [m for m in msgs if m.text.casefold() not in seen]
    return msgs


@dataclass(frozen=True, slots=True)
class LabelledMessage:
    """One message with its correct route and the kind of message it is."""

    text: str
    route: str
    kind: str


def load_messages(path: str | Path) -> list[LabelledMessage]:
    """Read a 4-way labelled JSONL file (``text``, ``route``, ``kind``), or the questions of a corpus-context
    file (``.json``, see ``chatrecall._bench._context``), each labelled ``both`` (kind ``mixed``).

    Raises:
        InvalidInputError: A line is not JSON or lacks a field, naming file:line.
    """
    path = Path(path)
    if path.suffix == ".json":
        from ._context import load_context_set

        return [LabelledMessage(s.question, "both", "mixed") for s in load_context_set(path).scenarios]
    out: list[LabelledMessage] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                msg = LabelledMessage(str(row["text"]), str(row["route"]), str(row.get("kind", "")))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise InvalidInputError(f"{path}:{lineno}: not a labelled message ({exc})") from None
            if msg.route not in _ROUTES:
                raise InvalidInputError(f"{path}:{lineno}: route={msg.route!r} is not one of {_ROUTES}")
            out.append(msg)
    return out


def _prf(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    tp = int(np.sum(y & p))
    prec = tp / int(p.sum()) if p.any() else 0.0
    rec = tp / int(y.sum()) if y.any() else 0.0
    return prec, rec


def route_metrics(messages: Sequence[LabelledMessage], predict: Callable[[str], str]) -> dict[str, Any]:
    """4-way route metrics of ``predict`` (message -> route value) on labelled messages.

    Returns:
        ``accuracy``; ``memory_precision`` / ``memory_recall`` (needs memory =
        label ``memory`` or ``both``); ``memory_recall_personal`` (plain
        personal questions only); ``corpus_precision`` / ``corpus_recall``;
        ``casual_skip_rate`` (casual and statement messages routed ``none``);
        per-kind accuracy; and the misrouted messages.
    """
    preds = [predict(m.text) for m in messages]
    gold = [m.route for m in messages]
    acc = float(np.mean([p == g for p, g in zip(preds, gold)])) if messages else 0.0
    y_mem = np.asarray([g in ("memory", "both") for g in gold])
    p_mem = np.asarray([p in ("memory", "both") for p in preds])
    y_cor = np.asarray([g in ("corpus", "both") for g in gold])
    p_cor = np.asarray([p in ("corpus", "both") for p in preds])
    mp, mr = _prf(y_mem, p_mem)
    cp, cr = _prf(y_cor, p_cor)
    personal = np.asarray([m.kind == "personal" for m in messages])
    casual = np.asarray([m.kind in ("casual", "statement") for m in messages])
    kinds: dict[str, float] = {}
    for kind in sorted({m.kind for m in messages}):
        sel = [p == m.route for p, m in zip(preds, messages) if m.kind == kind]
        kinds[kind] = float(np.mean(sel))
    return {
        "n": len(messages),
        "accuracy": acc,
        "memory_precision": mp,
        "memory_recall": mr,
        "memory_recall_personal": float(np.mean(p_mem[personal])) if personal.any() else 0.0,
        "corpus_precision": cp,
        "corpus_recall": cr,
        "casual_skip_rate": float(np.mean([p == "none" for p, c in zip(preds, casual) if c])) if casual.any() else 0.0,
        "accuracy_by_kind": kinds,
        "errors": [{"text": m.text, "kind": m.kind, "gold": m.route, "pred": p}
                   for m, p in zip(messages, preds) if p != m.route],
    }


def _load_binary(path: Path, text_field: str, label_fields: Sequence[str],
                 sources: Iterable[str]) -> tuple[list[str], list[bool]]:
    keep = set(sources)
    texts, labels = [], []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("source") not in keep:
                continue
            texts.append(row[text_field])
            labels.append(any(bool(row[f]) for f in label_fields))
    return texts, labels


def binary_metrics(texts: Sequence[str], labels: Sequence[bool], predict: Callable[[str], bool]) -> dict[str, float]:
    """Precision / recall / F1 / skip rate of a "needs memory" predictor."""
    y = np.asarray(labels, dtype=bool)
    p = np.asarray([predict(t) for t in texts], dtype=bool)
    prec, rec = _prf(y, p)
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"n": len(texts), "positives": int(y.sum()), "precision": prec, "recall": rec, "f1": f1,
            "skip_rate": float(np.mean(~p)) if len(p) else 0.0}


def gate_timing(gate: Gate, texts: Sequence[str], repeats: int = 5) -> dict[str, float]:
    """Per-message gate time in µs (fastest of ``repeats`` passes, as timeit does)."""
    for t in texts[:50]:
        gate.decide(t)
    best = np.full(len(texts), np.inf)
    clock = time.perf_counter_ns
    for _ in range(repeats):
        for j, t in enumerate(texts):
            t0 = clock()
            gate.decide(t)
            best[j] = min(best[j], (clock() - t0) / 1e3)
    return {"gate_us_p50": float(np.percentile(best, 50)), "gate_us_p95": float(np.percentile(best, 95))}


def run_routes(gate: Gate | None = None, *, data_dir: str | Path | None = None,
               splits: Sequence[str] = ("tune", "validation")) -> dict[str, Any]:
    """Score ``gate`` (default ``Gate()``) on each split of every labelled set.

    Args:
        gate: The gate to score.
        data_dir: ``shared/data/gating`` (default: beside the checkout).
        splits: Which splits to score.

    Returns:
        ``{"messages": {split: route_metrics}, "cast": {split: binary},
        "ikat": {split: binary}, "timing": {...}}``.
    """
    gate = gate or Gate()
    ddir = Path(data_dir) if data_dir else _REPO.parent / "shared" / "data" / "gating"
    out: dict[str, Any] = {"messages": {}, "cast": {}, "ikat": {}}
    all_texts: list[str] = []
    for split in splits:
        msgs = load_split(split)
        if msgs:
            out["messages"][split] = route_metrics(msgs, lambda t: gate.decide(t).route.value)
            all_texts += [m.text for m in msgs]
        cast = ddir / "cast_needs_history_labels.jsonl"
        if cast.exists() and split in CAST_SPLITS:
            texts, labels = _load_binary(cast, "raw_utterance", ("needs_history",), CAST_SPLITS[split])
            out["cast"][split] = binary_metrics(texts, labels, lambda t: gate.decide(t).route.wants_memory)
            all_texts += texts
        ikat = ddir / "ikat2023_memory_labels.jsonl"
        if ikat.exists() and split in IKAT_SPLITS:
            texts, labels = _load_binary(ikat, "utterance", ("needs_ptkb_memory", "needs_dialog_history"),
                                         IKAT_SPLITS[split])
            out["ikat"][split] = binary_metrics(texts, labels, lambda t: gate.decide(t).route.wants_memory)
            all_texts += texts
    if all_texts:
        out["timing"] = gate_timing(gate, all_texts)
    return out


def render_markdown(res: Mapping[str, Any]) -> str:
    """Tables of :func:`run_routes` output, each row naming its split."""
    lines = ["| split | n | route accuracy | memory precision | memory recall | personal recall | "
             "corpus precision | casual skipped |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for split, m in res.get("messages", {}).items():
        lines.append(f"| {split} | {m['n']} | {m['accuracy']:.3f} | {m['memory_precision']:.3f} | "
                     f"{m['memory_recall']:.3f} | {m['memory_recall_personal']:.3f} | {m['corpus_precision']:.3f} | "
                     f"{m['casual_skip_rate']:.3f} |")
    lines += ["", "| set | split | n | precision | recall | F1 | skip rate |", "|---|---|---:|---:|---:|---:|---:|"]
    for name in ("cast", "ikat"):
        for split, m in res.get(name, {}).items():
            lines.append(f"| {name} | {split} | {m['n']} | {m['precision']:.3f} | {m['recall']:.3f} | "
                         f"{m['f1']:.3f} | {m['skip_rate']:.3f} |")
    if "timing" in res:
        t = res["timing"]
        lines += ["", f"gate time per message: p50 {t['gate_us_p50']:.1f} µs, p95 {t['gate_us_p95']:.1f} µs"]
    return "\n".join(lines) + "\n"
