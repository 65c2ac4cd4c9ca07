#!/usr/bin/env python
"""Document chunk size (``add_documents``' ``max_words``) by leave-one-file-out on the corpus-context files.

Pre-registered criterion C26 (written before any run): the default ``max_words`` of ``add_documents`` (160) chosen
from {160, 100, 60}, ``overlap_words = min(30, max_words // 3)``, by corpus-context scoring on the tune files only
(``benchmarks/data/corpus_context``: set_a, set_b; leave-one-file-out); objective = gold document injected with
the gate's own route, both ways of asking (a new session; the end of the session that named the topic); ties ->
fewer passage tokens per question. Reported on the blind files (``benchmarks/data/corpus_context_blind``), chosen
value against 160 in the same run. Adopt only if: (1) each blind file's gold injected is not lower by more than
0.0125 and pooled over the blind files not lower; (2) passage tokens per question on the blind files down >= 20 %
pooled; (3) ``eval_chats.py --documents``: tokens per ask not up, gold_in_memories not lower in any file;
(4) the full test suite passes. (3) and (4) are run outside this script.

Data and harness: ``chatrecall/_bench/_context.py``. Gold injected = a chunk of a gold document among the
injected passages (every chunk of a document carries the document's id as its ``session_id``, so any chunk
counts). Tune stores hold the tune files' documents only; blind stores hold every file's documents (as
``blind_harness``), only the blind scenarios asked. One store per chunk size, everything else identical. The
route forced to ``both`` is reported too, for information; it is not part of the criterion.

Usage::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python benchmarks/bench_chunking.py [--out PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chatrecall._bench._common import machine_info, md_table
from chatrecall._bench._context import DATA_DIR, ContextHarness, ContextSet, Outcome, load_context_set

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "chunking.json"
#: Candidate chunk sizes; the first is the current default (the baseline).
GRID = (160, 100, 60)
BASE = 160
#: Ways of asking: (route forced, or None for the gate's own; where the question is asked). The criterion reads
#: the gate's ways only.
WAYS = ((None, "new"), (None, "evidence"), ("both", "new"), ("both", "evidence"))
CRITERION_WAYS = ("gate/new", "gate/evidence")


def overlap_for(max_words: int) -> int:
    return min(30, max_words // 3)


def way_name(way: tuple[str | None, str]) -> str:
    return f"{way[0] or 'gate'}/{way[1]}"


class ChunkedHarness(ContextHarness):
    """The corpus-context harness with documents chunked at ``max_words``."""

    def __init__(self, sets: Sequence[ContextSet], max_words: int) -> None:
        self.max_words = max_words
        self.chunks = 0
        super().__init__(sets)

    def _store_set(self, cs: ContextSet) -> None:
        rows = cs.document_rows()
        ids = self.engine.add_documents(rows, max_words=self.max_words, overlap_words=overlap_for(self.max_words))
        self.chunks += len(ids)
        # the users' sessions, exactly as the parent stores them (its add_documents call then gets no rows)
        super()._store_set(dataclasses.replace(cs, documents=()))


def run_ways(h: ContextHarness, only: Sequence[str] | None = None) -> dict[str, dict[str, list[Outcome]]]:
    """Way of asking -> set name -> outcomes (the engine's default corpus context, probe and mix)."""
    b = h.base_config
    return {way_name((route, ask)): h.run(items=b.corpus_memory_items, recent=b.corpus_recent_context, route=route,
                                          ask_in=ask, only=only)
            for route, ask in WAYS}


def stats(res: Mapping[str, Mapping[str, list[Outcome]]], sets: Sequence[str], ways: Sequence[str]) -> dict[str, float]:
    rows = [o for w in ways for s in sets for o in res[w][s]]
    n = len(rows)
    return {"n": n, "injected": sum(o.injected for o in rows) / n,
            "injected_count": sum(o.injected for o in rows),
            "passage_tokens": sum(o.passage_tokens for o in rows) / n,
            "other_passage_tokens": sum(o.other_passage_tokens for o in rows) / n}


def per_file(res: Mapping[str, Mapping[str, list[Outcome]]], names: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in names:
        out[n] = {"criterion (gate, both ways)": stats(res, [n], CRITERION_WAYS),
                  **{w: stats(res, [n], [w]) for w in res}}
    return out


def choose(results: Mapping[int, Mapping[str, Mapping[str, list[Outcome]]]], sets: Sequence[str]) -> int:
    """Highest gold injected (gate's route, both ways) over ``sets``; ties: fewer passage tokens per question."""
    def key(mw: int) -> tuple[float, float]:
        s = stats(results[mw], sets, CRITERION_WAYS)
        return (-round(s["injected"], 9), round(s["passage_tokens"], 6))
    return min(results, key=key)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA_DIR)
    ap.add_argument("--blind", type=Path, default=DATA_DIR.parent / "corpus_context_blind")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    tune = [load_context_set(f) for f in sorted(args.data.glob("*.json"))]
    blind = [load_context_set(f) for f in sorted(args.blind.glob("*.json"))]
    tnames, bnames = [s.name for s in tune], [s.name for s in blind]
    if len(tune) < 2:
        raise SystemExit("need at least two tune files for leave-one-file-out")

    # --- tune: stores of the tune files' documents only
    tune_res: dict[int, Any] = {}
    chunks: dict[str, dict[int, int]] = {"tune": {}, "blind": {}}
    for mw in GRID:
        t0 = time.perf_counter()
        h = ChunkedHarness(tune, mw)
        try:
            tune_res[mw] = run_ways(h)
            chunks["tune"][mw] = h.chunks
        finally:
            h.close()
        print(f"tune max_words={mw}: {chunks['tune'][mw]} chunks, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    folds = []
    for held in tnames:
        c = choose(tune_res, [n for n in tnames if n != held])
        folds.append({"held_out": held, "chosen": c,
                      "rows": {mw: stats(tune_res[mw], [held], CRITERION_WAYS) for mw in GRID}})
        print(f"fold held out {held}: chosen {c}", file=sys.stderr)
    final = choose(tune_res, tnames)
    print(f"final (chosen on {tnames}): {final}", file=sys.stderr)

    # --- blind: every file's documents in one store, only the blind scenarios asked; every size reported
    blind_res: dict[int, Any] = {}
    for mw in GRID:
        t0 = time.perf_counter()
        h = ChunkedHarness([*tune, *blind], mw)
        try:
            blind_res[mw] = run_ways(h, only=bnames)
            chunks["blind"][mw] = h.chunks
        finally:
            h.close()
        print(f"blind max_words={mw}: {chunks['blind'][mw]} chunks, {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "machine": machine_info(), "grid": list(GRID),
        "overlap": {mw: overlap_for(mw) for mw in GRID}, "chunks": chunks,
        "criterion_ways": list(CRITERION_WAYS), "folds": folds, "final": final,
        "tune_in_sample": {mw: per_file(tune_res[mw], tnames) | {"pooled": stats(tune_res[mw], tnames, CRITERION_WAYS)}
                           for mw in GRID},
        "blind": {mw: per_file(blind_res[mw], bnames) | {"pooled": stats(blind_res[mw], bnames, CRITERION_WAYS)}
                  for mw in GRID},
    }
    out["criteria"] = criteria(out, bnames) if final != BASE else {"note": f"final choice is {BASE}: nothing to adopt"}
    # for information only (not the pre-registered decision, which reads the final choice alone)
    out["criteria_if_forced"] = {mw: criteria(out, bnames, mw) for mw in GRID if mw != BASE}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    md = render(out, tnames, bnames)
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)
    return 0


def criteria(out: Mapping[str, Any], bnames: Sequence[str], mw: int | None = None) -> dict[str, Any]:
    """Criteria 1 and 2 for the final choice (or ``mw``) against 160, on the blind files."""
    fin, base = out["blind"][out["final"] if mw is None else mw], out["blind"][BASE]
    key = "criterion (gate, both ways)"
    files = {n: {"base": base[n][key]["injected"], "chosen": fin[n][key]["injected"],
                 "ok": fin[n][key]["injected"] >= base[n][key]["injected"] - 0.0125 - 1e-9} for n in bnames}
    pooled_ok = fin["pooled"]["injected"] >= base["pooled"]["injected"] - 1e-9
    drop = 1 - fin["pooled"]["passage_tokens"] / base["pooled"]["passage_tokens"]
    return {"1_files": files, "1_pooled": {"base": base["pooled"]["injected"], "chosen": fin["pooled"]["injected"],
                                           "ok": pooled_ok},
            "1": all(f["ok"] for f in files.values()) and pooled_ok,
            "2": {"base": base["pooled"]["passage_tokens"], "chosen": fin["pooled"]["passage_tokens"],
                  "reduction": drop, "ok": drop >= 0.20}}


def _criteria_lines(c: Mapping[str, Any]) -> list[str]:
    L = []
    for n, f in c["1_files"].items():
        L.append(f"- 1 `{n}`: gold injected {f['base']:.4f} -> {f['chosen']:.4f} (allowed drop 0.0125): "
                 f"{'pass' if f['ok'] else 'FAIL'}")
    p = c["1_pooled"]
    L.append(f"- 1 pooled: {p['base']:.4f} -> {p['chosen']:.4f} (not lower): {'pass' if p['ok'] else 'FAIL'}")
    q = c["2"]
    L.append(f"- 2 passage tokens / q pooled: {q['base']:.1f} -> {q['chosen']:.1f} ({q['reduction']:.1%} down; "
             f">= 20 % needed): {'pass' if q['ok'] else 'FAIL'}")
    return L


def _row(label: str, s: Mapping[str, float]) -> dict[str, str]:
    return {"system": label, "gold injected": f"{s['injected']:.4f} ({s['injected_count']}/{s['n']})",
            "passage tokens / q": f"{s['passage_tokens']:.1f}", "non-gold passage tokens / q": f"{s['other_passage_tokens']:.1f}"}


def render(out: Mapping[str, Any], tnames: Sequence[str], bnames: Sequence[str]) -> str:
    heads = ["gold injected", "passage tokens / q", "non-gold passage tokens / q"]
    key = "criterion (gate, both ways)"
    L = ["# Document chunk size (C26): add_documents' max_words by leave-one-file-out", "",
         f"`benchmarks/bench_chunking.py` ({out['date']}). Candidates {out['grid']} (overlap_words = min(30, "
         f"max_words // 3): {out['overlap']}). Gold injected = a chunk of a gold document among the injected passages. "
         "Criterion rows: the gate's own route, each question asked in a new session and at the end of the session "
         "that named its topic (80 rows per file). Chunks stored: " + json.dumps(out["chunks"]) + ".", "",
         "## Leave-one-file-out on the tune files (chosen on the other file, reported on the held-out one)", ""]
    for f in out["folds"]:
        L += [f"Held out `{f['held_out']}`: chosen **{f['chosen']}** (on the other tune file).", "",
              md_table([_row(f"max_words {mw}" + (" (chosen)" if mw == f["chosen"] else ""), s)
                        for mw, s in f["rows"].items()], heads, first="system"), ""]
    got = sum(f["rows"][f["chosen"]]["injected_count"] for f in out["folds"])
    was = sum(f["rows"][BASE]["injected_count"] for f in out["folds"])
    n = sum(f["rows"][BASE]["n"] for f in out["folds"])
    tok = sum(f["rows"][f["chosen"]]["passage_tokens"] * f["rows"][f["chosen"]]["n"] for f in out["folds"]) / n
    tok0 = sum(f["rows"][BASE]["passage_tokens"] * f["rows"][BASE]["n"] for f in out["folds"]) / n
    L += [f"Pooled over the held-out folds: the size chosen per fold {got}/{n} gold injected, {tok:.1f} passage "
          f"tokens / q; {BASE} {was}/{n}, {tok0:.1f}.", "",
          f"Final choice (on {', '.join(tnames)} together; in-sample): **{out['final']}**.", "",
          "## Blind files (never read by the choice), every max_words, gate's route, both ways", ""]
    rows = []
    for n in [*bnames, "pooled"]:
        for mw in out["grid"]:
            s = out["blind"][mw][n] if n == "pooled" else out["blind"][mw][n][key]
            rows.append(_row(f"`{n}` max_words {mw}", s))
    L += [md_table(rows, heads, first="system"), "",
          "Per way of asking (blind; `both/*` = route forced to both, for information only):", ""]
    rows = []
    for n in bnames:
        for mw in out["grid"]:
            for w in ("gate/new", "gate/evidence", "both/new", "both/evidence"):
                rows.append(_row(f"`{n}` {mw} {w}", out["blind"][mw][n][w]))
    L += [md_table(rows, heads, first="system"), ""]
    c = out["criteria"]
    if "note" in c:
        L += [f"## Decision: {c['note']}", "",
              f"The pre-registered choice (leave-one-file-out on the tune files, final on both) is {BASE}, the current "
              "default, so criteria 1-2 have no candidate and the default is not changed. For information only (not "
              "the decision), criteria 1-2 for each other candidate forced against 160 on the blind files:", ""]
        for mw, ci in out["criteria_if_forced"].items():
            L += [f"max_words {mw} (not chosen):", "", *_criteria_lines(ci), ""]
    else:
        L += [f"## Criteria 1-2: {out['final']} against {BASE} (blind)", "", *_criteria_lines(c), ""]
    L += ["## In-sample: the tune files, every max_words (gate's route, both ways)", ""]
    rows = []
    for n in [*tnames, "pooled"]:
        for mw in out["grid"]:
            s = out["tune_in_sample"][mw][n] if n == "pooled" else out["tune_in_sample"][mw][n][key]
            rows.append(_row(f"`{n}` max_words {mw}", s))
    L += [md_table(rows, heads, first="system"), ""]
    L += ["Machine: " + ", ".join(f"{k} {v}" for k, v in out["machine"].items() if not isinstance(v, dict)) + ".", ""]
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
