#!/usr/bin/env python
"""Choose how the conversation informs the corpus query of a turn that searches both, by leave-one-file-out.

The constants (``corpus_memory_items``, ``corpus_recent_context``; see ``RetrievalConfig``) decide how a
turn that searches both memory and the corpus queries the corpus: the message with the user's turns of
the recent window (when ``corpus_recent_context``) and the top ``items`` memories found appended,
embedded together (0 and False: the message alone, the behaviour before this script). Data and metrics:
``chatrecall/_bench/_context.py``; every question is asked in a new session and at the end of the
session that named its topic, and both count.

Protocol (nothing chosen on the data it is reported on):

* folds: the data files (each written by a different writer, on different themes); for each file,
  the configuration is chosen on the other files only (by MRR of the first gold document over all
  their scenarios, asked both ways; ties: without recent turns, then fewer items) and reported on the
  held-out file, against the message alone in the same run;
* the final configuration is then chosen the same way on all files and written into the
  ``corpus context`` block of ``chatrecall/core/_tuned.py`` (its figures on those files are
  in-sample, and labelled so);
* the gate's own route is reported for the final configuration and the message alone;
* with the gate's own route and the final configuration, the memory probe (``RetrievalConfig.memory_probe``)
  and the budget mix (``BudgetConfig.mix``), which have no constant to choose, are reported on and off
  (both ways of asking; "memory evidence" = a turn that names the topic reached the prompt), and on general
  questions (the held-out gate splits' messages labelled corpus) asked by the same users, whose memories
  are then only a cost;
* blind files (``benchmarks/data/corpus_context_blind``, written after this script's choice and never read
  by it) are then measured after the choice, in a second store holding every file's documents: the final
  configuration against the message alone (route forced to both), and the memory probe and budget mix.

Usage::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python benchmarks/tune_corpus_context.py [--no-write]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chatrecall._bench._common import machine_info, md_table, replace_tuned_block
from chatrecall._bench._context import (
    DATA_DIR,
    GENERAL_SPLITS,
    ContextHarness,
    GeneralOutcome,
    Outcome,
    blind_harness,
    general_questions,
    load_context_set,
    summarise,
)

ROOT = Path(__file__).resolve().parents[1]
TUNED = ROOT / "chatrecall" / "core" / "_tuned.py"
OUT = ROOT / "benchmarks" / "results" / "corpus_context.json"
#: The grid searched: memories appended (0 = none) x the recent window's user turns appended.
GRID_ITEMS = (0, 1, 2, 3, 4, 5)
GRID_RECENT = (False, True)
MODES = ("new", "evidence")
#: Memory probe x budget mix, gate's own route (name, memory_probe, mix): the first is the behaviour before.
PROBE_SYSTEMS = (("no probe, score order (before)", False, "score"), ("probe, score order", True, "score"),
                 ("probe, alternate (default)", True, "alternate"))

Config = tuple[int, bool]
#: config -> mode -> set name -> outcomes
Results = Mapping[Config, Mapping[str, Mapping[str, list[Outcome]]]]


def rows_of(results: Results, c: Config, sets: Sequence[str], modes: Sequence[str] = MODES) -> list[Outcome]:
    return [o for m in modes for s in sets for o in results[c][m][s]]


def choose(results: Results, sets: Sequence[str]) -> Config:
    """The configuration with the best MRR over ``sets``' scenarios asked both ways; ties: without recent
    turns, then fewer items."""
    def key(c: Config) -> tuple[float, bool, int]:
        return (-round(summarise(rows_of(results, c, sets))["mrr"], 6), c[1], c[0])
    return min(results, key=key)


def by_kind(rows: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    return {"implied": summarise([o for o in rows if o.kind == "implied"]),
            "explicit": summarise([o for o in rows if o.kind == "explicit"]),
            "all": summarise(rows)}


def write_tuned(cfg: Config, stamp: str, n_sets: int, n_scen: int) -> None:
    """Rewrite only the ``corpus context`` block of _tuned.py."""
    replace_tuned_block(TUNED, "corpus context", "benchmarks/tune_corpus_context.py", f'''\
# Chosen by tune_corpus_context.py {stamp} on ALL {n_sets} files of benchmarks/data/corpus_context ({n_scen}
# scenarios, each asked in a new session and in the session that named its topic; in-sample there).
# Leave-one-file-out figures: benchmarks/results/corpus_context.md.
#: How many of the top memories found on a turn that searches both are appended to the message to query the
#: corpus (0: none).
CORPUS_MEMORY_ITEMS = {cfg[0]}
#: Whether the user's turns of the recent window are appended too.
CORPUS_RECENT_CONTEXT = {cfg[1]}
''')


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """``md_table`` for rows given as lists in ``head``'s order."""
    return md_table([dict(zip(head, r)) for r in rows], head[1:], first=head[0])


def fmt(s: Mapping[str, float]) -> list[str]:
    return [f"{s['hit1']:.3f}", f"{s['hit3']:.3f}", f"{s['mrr']:.3f}", f"{s['injected']:.3f}"]


def probe_cells(by_mode: Mapping[str, Mapping[str, float]]) -> list[str]:
    """hit@1, gold injected and memory evidence, per way of asking."""
    return [f"{by_mode[m][k]:.3f}" for m in MODES for k in ("hit1", "injected", "memory")]


def describe(c: Config) -> str:
    return ("message alone" if c == (0, False) else
            "message + " + " + ".join((["recent user turns"] if c[1] else []) + ([f"top {c[0]} memories"] if c[0] else [])))


def blind_report(files: Sequence[Path], sets: Sequence[Any], final: Config) -> dict[str, Any]:
    """The held-out files, measured after the choice: every file's documents in one store, only the blind scenarios asked."""
    if not files:
        return {}
    with blind_harness(sets, files) as (h, names):
        def ask(**kw: Any) -> dict[str, list[Outcome]]:
            return {mode: [o for rows in h.run(ask_in=mode, only=names, **kw).values() for o in rows] for mode in MODES}
        forced = {"message": ask(items=0, recent=False), "final": ask(items=final[0], recent=final[1])}
        probe = {label: ask(items=final[0], recent=final[1], route=None, probe=p, mix=mix)
                 for label, p, mix in PROBE_SYSTEMS}
    return {"files": [f.name for f in files], "final": {"items": final[0], "recent": final[1]},
            "forced_both": {k: {m: by_kind(v[m]) for m in MODES} for k, v in forced.items()},
            "probe_and_mix": {k: {m: summarise(v[m]) for m in MODES} for k, v in probe.items()}}


def blind_markdown(blind: Mapping[str, Any]) -> list[str]:
    if not blind:
        return []
    rows = []
    for label, key in ((f"final: {describe((blind['final']['items'], blind['final']['recent']))}", "final"),
                       ("message alone (before)", "message")):
        for mode in MODES:
            for kind in ("implied", "explicit", "all"):
                r = blind["forced_both"][key][mode][kind]
                rows.append([mode, label, f"{kind} ({r['n']})", *fmt(r)])
    probe_rows = [[label, *probe_cells(blind["probe_and_mix"][label])] for label, _, _ in PROBE_SYSTEMS]
    return [
        f"## Blind files ({', '.join(blind['files'])}): measured after the choice, never chosen on", "",
        "Every file's documents in one store; only the blind files' scenarios asked.", "",
        "Route forced to both:", "",
        table(["asked in", "system", "kind", "hit@1", "hit@3", "MRR", "gold injected"], rows), "",
        "Gate's own route, final configuration:", "",
        table(["system", "new: hit@1", "new: gold injected", "new: memory evidence", "evidence: hit@1",
               "evidence: gold injected", "evidence: memory evidence"], probe_rows), "",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA_DIR)
    ap.add_argument("--blind", type=Path, default=DATA_DIR.parent / "corpus_context_blind",
                    help="held-out files, measured with the final configuration after the choice (never chosen on)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--no-write", action="store_true", help="do not rewrite the corpus context block of _tuned.py")
    args = ap.parse_args(argv)
    files = sorted(args.data.glob("*.json"))
    if len(files) < 2:
        raise SystemExit(f"{args.data}: need at least two data files for leave-one-file-out, found {len(files)}")
    sets = [load_context_set(f) for f in files]
    names = [s.name for s in sets]
    t0 = time.perf_counter()
    h = ContextHarness(sets)
    print(f"stored {len(sets)} sets in {time.perf_counter() - t0:.1f} s ({h.store_desc})", file=sys.stderr)
    results: dict[Config, dict[str, dict[str, list[Outcome]]]] = {
        (m, r): {mode: h.run(items=m, recent=r, ask_in=mode) for mode in MODES}
        for r in GRID_RECENT for m in GRID_ITEMS}
    base: Config = (0, False)

    folds: list[dict[str, Any]] = []
    pooled: dict[str, dict[str, list[Outcome]]] = {k: {m: [] for m in MODES} for k in ("chosen", "message")}
    for held in names:
        c = choose(results, [n for n in names if n != held])
        fold: dict[str, Any] = {"held_out": held, "chosen": {"items": c[0], "recent": c[1]}}
        for mode in MODES:
            fold[mode] = {"chosen": by_kind(results[c][mode][held]), "message": by_kind(results[base][mode][held])}
            pooled["chosen"][mode] += results[c][mode][held]
            pooled["message"][mode] += results[base][mode][held]
        folds.append(fold)
    final = choose(results, names)
    gate_final = h.run(items=final[0], recent=final[1], route=None)
    gate_base = h.run(items=0, recent=False, route=None)
    general_q = general_questions()
    probe_runs: dict[str, dict[str, list[Outcome]]] = {}
    general: dict[str, GeneralOutcome] = {}
    h.run_general(general_q)  # warm-up: every user's index cached first, so the p50 column compares like with like
    for label, probe, mix in PROBE_SYSTEMS:
        probe_runs[label] = {mode: [o for rows in h.run(items=final[0], recent=final[1], route=None, ask_in=mode,
                                                        probe=probe, mix=mix).values() for o in rows]
                             for mode in MODES}
        general[label] = h.run_general(general_q, probe=probe, mix=mix)
    h.close()
    blind = blind_report(sorted(args.blind.glob("*.json")), sets, final)

    def all_rows(res: Mapping[str, list[Outcome]]) -> list[Outcome]:
        return [o for n in names for o in res[n]]

    routes = Counter(o.route for o in all_rows(gate_base))
    n_scen = sum(len(s.scenarios) for s in sets)
    stamp = time.strftime("%Y-%m-%d")
    out = {
        "protocol": "leave-one-file-out: each file's figures use the configuration chosen on the other files; "
                    "'message alone' = the corpus queried with the message alone (before); each question asked "
                    "in a new session and at the end of the session that named its topic; all in one run, "
                    "same store and model",
        "machine": machine_info(),
        "files": [str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f) for f in files],
        "grid": {"items": list(GRID_ITEMS), "recent": list(GRID_RECENT)},
        "folds": folds,
        "held_out_pooled": {k: {m: by_kind(v[m]) for m in MODES} for k, v in pooled.items()},
        "final": {"items": final[0], "recent": final[1],
                  "in_sample_route_both": {m: by_kind(all_rows(results[final][m])) for m in MODES}},
        "gate_route": {"routes": dict(routes), "message": by_kind(all_rows(gate_base)),
                       "final": by_kind(all_rows(gate_final))},
        "probe_and_mix": {label: {**{m: summarise(probe_runs[label][m]) for m in MODES},
                                  "general": vars(general[label])} for label, _, _ in PROBE_SYSTEMS},
        "blind": blind,
        "grid_mrr_all": {f"{c[0]}/{'recent' if c[1] else '-'}": round(summarise(rows_of(results, c, names))["mrr"], 4)
                         for c in results},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")

    head = ["set", "asked in", "system", "kind", "hit@1", "hit@3", "MRR", "gold injected"]
    held_table: list[list[str]] = []
    for f in folds:
        chosen = describe((f["chosen"]["items"], f["chosen"]["recent"]))
        for mode in MODES:
            for label, key in ((f"chosen on the other file: {chosen}", "chosen"), ("message alone (before)", "message")):
                for kind in ("implied", "explicit"):
                    r = f[mode][key][kind]
                    held_table.append([f["held_out"], mode, label, f"{kind} ({r['n']})", *fmt(r)])
    pooled_table = []
    for mode in MODES:
        for label, key in (("chosen per fold", "chosen"), ("message alone (before)", "message")):
            for kind in ("implied", "explicit", "all"):
                r = out["held_out_pooled"][key][mode][kind]
                pooled_table.append([mode, label, f"{kind} ({r['n']})", *fmt(r)])
    gate = []
    for label, key in ((f"final: {describe(final)}", "final"), ("message alone (before)", "message")):
        for kind in ("implied", "explicit", "all"):
            r = out["gate_route"][key][kind]
            gate.append([label, f"{kind} ({r['n']})", *fmt(r)])
    probe_table = []
    for label, _, _ in PROBE_SYSTEMS:
        g = general[label]
        probe_table.append([label, *probe_cells(out["probe_and_mix"][label]), f"{g.with_memory / g.n:.3f} ({g.with_memory})", f"{g.tokens / g.n:.0f}",
                            str(g.probed), f"{g.p50_ms:.1f}"])
    probe_head = ["system", "new: hit@1", "new: gold injected", "new: memory evidence", "evidence: hit@1",
                  "evidence: gold injected", "evidence: memory evidence",
                  f"general ({len(general_q)}): with a memory", "general: tokens / turn", "general: probed",
                  "general: p50 ms"]
    md = [
        "# Corpus queries informed by the conversation (leave-one-file-out)", "",
        f"Generated by `benchmarks/tune_corpus_context.py` ({stamp}). {out['protocol']}.",
        f"Data: {', '.join(out['files'])} ({n_scen} scenarios; each file by a different writer who saw no code).",
        "Metrics: rank of the first gold document among the corpus items the retrieve ranked (top k = "
        "RetrievalConfig.top_k); gold injected = a gold document in the context given to the LLM. Asked in: "
        "`new` = a new session; `evidence` = the end of the session that named the topic.", "",
        "## Held out: each file with the configuration chosen on the other (route forced to both)", "",
        table(head, held_table), "",
        "## Pooled over the held-out files", "",
        table(["asked in", "system", "kind", "hit@1", "hit@3", "MRR", "gold injected"], pooled_table), "",
        f"## The gate's own route, questions in a new session (final configuration, in-sample): routes {dict(routes)}",
        "",
        table(["system", "kind", "hit@1", "hit@3", "MRR", "gold injected"], gate), "",
        "## Memory probe and budget mix (gate's own route, final configuration; nothing chosen here)", "",
        "Memory evidence = a memory turn that names the topic reached the prompt (found, or in the recent "
        f"window). General = the held-out gate splits' messages labelled corpus ({', '.join(GENERAL_SPLITS)}), "
        "asked in new sessions by the same users, whose histories are about other things.", "",
        table(probe_head, probe_table), "",
        *blind_markdown(blind),
        f"Final (chosen on all files; written to `_tuned.py`): {describe(final)}. "
        f"MRR over all scenarios, both ways (in-sample), per configuration: {out['grid_mrr_all']}.", "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in out["machine"].items() if not isinstance(v, dict)) + ".",
    ]
    args.out.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))
    if not args.no_write:
        write_tuned(final, stamp, len(sets), n_scen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
