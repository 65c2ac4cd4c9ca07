"""Choose the gate's tuned constants on the tune split only, then report every split.

Tune split: ``benchmarks/data/gate_messages_tune*.jsonl`` (one file per writer, 4-way routes), TREC CAsT
2019-2020 and iKAT 2023 train (binary "needs memory"). Validation split, never
looked at while choosing: ``gate_messages_validation.jsonl`` (written before the
gate changed), CAsT 2021-2022, iKAT 2023 test.

Two steps, both on the tune split only:

1. The pattern-score constants (used as they are with ``GateConfig(learned=False)``,
   and as features of step 2): a coordinate descent over a few category
   multipliers, the two thresholds and ``both_margin``; the objective is the tune
   split's 4-way route accuracy plus the mean "needs memory" F1 on CAsT / iKAT
   tune, with a penalty when needs-memory recall on the tune messages falls under
   0.95 (a personal question left unanswered is the costliest mistake). Written
   into the ``gate`` block of ``chatrecall/core/_tuned.py``.
2. The learned combiner (the default route): two L2-regularised logistic heads
   (needs memory, needs the corpus) over the features of ``chatrecall.core._gate_model``,
   trained on the tune messages. CAsT / iKAT tune may join the memory head with
   their pattern features only (their words describe search-engine queries, not
   chat: with them, "the" and "?" become memory evidence), at a sample weight.
   Features seen fewer than ``MIN_COUNT`` times are dropped. The regularisation
   ``C`` and that weight are chosen by leave-one-set-out 4-way route accuracy over
   the tune message sets (each set was written by a different author). Written to
   ``chatrecall/data/gate_model.json`` with its provenance. Needs scikit-learn
   (installed with sentence-transformers).

The report (every split: tune in-sample, validation and the blind sets held out)
goes to ``benchmarks/results/gate_routes.{json,md}``.

Usage::

    python benchmarks/tune_gate.py            # tune, write _tuned.py, report
    python benchmarks/tune_gate.py --report   # report the current constants only
    python benchmarks/tune_gate.py --model    # keep the constants, retrain the combiner, report
    python benchmarks/tune_gate.py --compare-sets NEW.jsonl ...  # should these sets join the tune split?
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from chatrecall._bench._routes import (
    CAST_SPLITS,
    IKAT_SPLITS,
    MESSAGE_FILES,
    _load_binary,
    binary_metrics,
    load_messages,
    load_split,
    render_markdown,
    route_metrics,
    run_routes,
)
from chatrecall.core import Gate, GateConfig
from chatrecall.core._gate import asks_something
from chatrecall.core._gate_model import MODEL_FILE, LinearRouter, feature_items

REPO = Path(__file__).resolve().parents[1]
TUNED = REPO / "chatrecall" / "core" / "_tuned.py"
OUT = REPO / "benchmarks" / "results" / "gate_routes"
DATA = REPO.parent / "shared" / "data" / "gating"

CATEGORIES = ("personal", "continuity", "knowledge", "statement", "recall", "temporal", "explicit", "smalltalk")
GRID_MULT = (0.6, 0.8, 1.0, 1.2, 1.4)
GRID_THRESHOLD = (0.4, 0.45, 0.5, 0.55, 0.6)
GRID_MARGIN = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
#: Every labelled split but the tune one: reported, never trained on.
HELD_OUT = tuple(split for split in MESSAGE_FILES if split != "tune")
#: Combiner: regularisation grid (chosen by leave-one-set-out), least feature count.
GRID_C = (1.0, 3.0, 10.0, 30.0)
GRID_BINARY_WEIGHT = (0.0, 1.0)
#: Floors of the question rule (P of the likelier head; None: no rule), chosen by leave-one-set-out.
GRID_QUESTION_FLOOR: tuple[float | None, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, None)
MIN_COUNT = 2
MODEL_PATH = REPO / "chatrecall" / "data" / MODEL_FILE


def _tune_data() -> dict[str, Any]:
    return {
        "messages": load_split("tune"),
        "cast": _load_binary(DATA / "cast_needs_history_labels.jsonl", "raw_utterance", ("needs_history",),
                             CAST_SPLITS["tune"]),
        "ikat": _load_binary(DATA / "ikat2023_memory_labels.jsonl", "utterance",
                             ("needs_ptkb_memory", "needs_dialog_history"), IKAT_SPLITS["tune"]),
    }


def objective(params: dict[str, Any], data: dict[str, Any]) -> float:
    cfg = GateConfig(category_weights=params["category_weights"], memory_threshold=params["memory_threshold"],
                     corpus_threshold=params["corpus_threshold"], both_margin=params["both_margin"], learned=False)
    gate = Gate(cfg)
    m = route_metrics(data["messages"], lambda t: gate.decide(t).route.value)
    f1s = [binary_metrics(*data[k], lambda t: gate.decide(t).route.wants_memory)["f1"] for k in ("cast", "ikat")]
    penalty = max(0.0, 0.95 - m["memory_recall"]) * 2.0
    return m["accuracy"] + 0.5 * sum(f1s) / len(f1s) - penalty


def tune() -> dict[str, Any]:
    data = _tune_data()
    params: dict[str, Any] = {"category_weights": {c: 1.0 for c in CATEGORIES}, "memory_threshold": 0.5,
                              "corpus_threshold": 0.5, "both_margin": 0.5}
    best = objective(params, data)
    for _ in range(2):  # two coordinate-descent passes
        improved = False
        for cat in CATEGORIES:
            for v in GRID_MULT:
                trial = {**params, "category_weights": {**params["category_weights"], cat: v}}
                score = objective(trial, data)
                if score > best + 1e-9:
                    best, params, improved = score, trial, True
        for name, grid in (("memory_threshold", GRID_THRESHOLD), ("corpus_threshold", GRID_THRESHOLD),
                           ("both_margin", GRID_MARGIN)):
            for v in grid:
                trial = {**params, name: v}
                score = objective(trial, data)
                if score > best + 1e-9:
                    best, params, improved = score, trial, True
        if not improved:
            break
    params["category_weights"] = {k: v for k, v in params["category_weights"].items() if v != 1.0}
    params["objective_tune"] = best
    return params


def _feature_dict(gate: Gate, text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in feature_items(*gate._features(text)):
        out[key] = out.get(key, 0.0) + value
    return out


def _fit(x_mem: Any, y_mem: Any, x_corp: Any, y_corp: Any, c: float, w_mem: Any = None) -> tuple[Any, Any]:
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError as exc:  # pragma: no cover - dev tool
        raise SystemExit("tune_gate.py trains the combiner with scikit-learn: pip install scikit-learn") from exc
    head_m = LogisticRegression(C=c, max_iter=5000).fit(x_mem, y_mem, sample_weight=w_mem)
    head_c = LogisticRegression(C=c, max_iter=5000).fit(x_corp, y_corp)
    return head_m, head_c


class _Trainer:
    """The combiner's features for the tune messages (and CAsT / iKAT tune), computed once, and the fit /
    score steps that leave-one-set-out repeats."""

    def __init__(self, gate: Gate, sets: list[tuple[str, list[Any]]]) -> None:
        data = _tune_data()
        self.btexts = data["cast"][0] + data["ikat"][0]
        self.blabels = np.asarray(data["cast"][1] + data["ikat"][1], dtype=bool)
        self.feats = {m.text: _feature_dict(gate, m.text) for _, msgs in sets for m in msgs}
        # what the gate's question rule needs: the pattern scores' route, a correction, the question form
        self.rule_route: dict[str, str] = {}
        for _, msgs in sets:
            for m in msgs:
                d = gate.decide(m.text)
                asks = asks_something(m.text.replace("\u2019", "'").lower())
                self.rule_route[m.text] = d.route.value if asks and not d.correction else "none"
        # CAsT / iKAT rows: pattern features only (see the module docstring)
        self.bfeats = [{k: v for k, v in _feature_dict(gate, t).items() if not k.startswith(("u:", "b:"))}
                       for t in self.btexts]

    def fit(self, train_msgs: list[Any], c: float, bw: float) -> tuple[Any, Any, Any]:
        from scipy.sparse import vstack
        from sklearn.feature_extraction import DictVectorizer

        rows = [self.feats[m.text] for m in train_msgs]
        extra = self.bfeats if bw > 0 else []
        counts: dict[str, int] = {}
        for f in rows + extra:
            for k in f:
                counts[k] = counts.get(k, 0) + 1
        keep = {k for k, n in counts.items() if n >= MIN_COUNT}
        dv = DictVectorizer().fit([{k: v for k, v in f.items() if k in keep} for f in rows + extra])
        x = dv.transform(rows)
        y = np.asarray([m.route for m in train_msgs])
        y_mem = np.isin(y, ["memory", "both"])
        if extra:
            head_m, head_c = _fit(vstack([x, dv.transform(extra)]), np.concatenate([y_mem, self.blabels]), x,
                                  np.isin(y, ["corpus", "both"]), c,
                                  np.concatenate([np.ones(len(rows)), np.full(len(extra), bw)]))
        else:
            head_m, head_c = _fit(x, y_mem, x, np.isin(y, ["corpus", "both"]), c)
        return dv, head_m, head_c

    def predict(self, model: tuple[Any, Any, Any], msgs: list[Any], question_floor: float | None = None) -> Any:
        dv, head_m, head_c = model
        x = dv.transform([self.feats[m.text] for m in msgs])
        lm, lc = head_m.decision_function(x), head_c.decision_function(x)
        pm, pc = lm >= 0, lc >= 0
        out = np.where(pm & pc, "both", np.where(pm, "memory", np.where(pc, "corpus", "none")))
        if question_floor is not None:  # as Gate.decide: an unsure unsearched question takes the patterns' search
            rule = np.asarray([self.rule_route[m.text] for m in msgs])
            floor = -np.inf if question_floor <= 0 else np.log(question_floor / (1 - question_floor))
            out = np.where((out == "none") & (rule != "none") & (np.maximum(lm, lc) >= floor), rule, out)
        return out

    def held_out_models(self, sets: list[tuple[str, list[Any]]], c: float, bw: float,
                        added: list[Any] | None = None) -> Iterator[tuple[list[Any], tuple[Any, Any, Any]]]:
        """Each set's messages with a combiner trained on the other sets (plus ``added``), in order."""
        for name, msgs in sets:
            yield msgs, self.fit([m for other, ms in sets if other != name for m in ms] + (added or []), c, bw)

    def leave_one_set_out(self, sets: list[tuple[str, list[Any]]], c: float, bw: float,
                          added: list[Any] | None = None) -> list[float]:
        """Each set's accuracy under a combiner trained on the other sets (plus ``added``), in order."""
        return [self.accuracy(model, msgs) for msgs, model in self.held_out_models(sets, c, bw, added)]

    def accuracy(self, model: tuple[Any, Any, Any], msgs: list[Any], question_floor: float | None = None) -> float:
        return float(np.mean(self.predict(model, msgs, question_floor) == np.asarray([m.route for m in msgs])))

    def question_floors(self, sets: list[tuple[str, list[Any]]], c: float, bw: float
                        ) -> dict[float | None, tuple[float, float]]:
        """Leave-one-set-out (accuracy, memory recall) for each question-rule floor of ``GRID_QUESTION_FLOOR``
        (one fit per set; memory recall over every memory / both message of the sets)."""
        acc: dict[float | None, list[float]] = {f: [] for f in GRID_QUESTION_FLOOR}
        hit: dict[float | None, int] = dict.fromkeys(GRID_QUESTION_FLOOR, 0)
        need = 0
        for msgs, model in self.held_out_models(sets, c, bw):
            y = np.asarray([m.route for m in msgs])
            wants = np.isin(y, ["memory", "both"])
            need += int(wants.sum())
            for f in GRID_QUESTION_FLOOR:
                pred = self.predict(model, msgs, f)
                acc[f].append(float(np.mean(pred == y)))
                hit[f] += int(np.sum(np.isin(pred, ["memory", "both"]) & wants))
        return {f: (float(np.mean(acc[f])), hit[f] / max(need, 1)) for f in GRID_QUESTION_FLOOR}


def _tune_sets() -> list[tuple[str, list[Any]]]:
    return [(p.name, load_messages(p)) for p in MESSAGE_FILES["tune"] if p.exists()]


def train_model(gate: Gate, log: Any = print) -> tuple[LinearRouter, dict[str, Any]]:
    """Train the combiner on the tune split (features from ``gate``, a ``learned=False`` gate)."""
    sets = _tune_sets()
    tr = _Trainer(gate, sets)
    lofo: dict[tuple[float, float], float] = {}
    for c in GRID_C:
        for bw in GRID_BINARY_WEIGHT:
            lofo[c, bw] = float(np.mean(tr.leave_one_set_out(sets, c, bw)))
            log(f"combiner C={c} CAsT/iKAT weight={bw}: leave-one-set-out route accuracy {lofo[c, bw]:.4f}")
    best_c, best_bw = max(lofo, key=lambda cb: (lofo[cb], -cb[0]))
    # The question rule's floor (see Gate.decide) at the chosen C: the most accurate floor that leaves memory
    # recall where the rule applied always (floor 0) put it: a memory question left unsearched loses its
    # evidence, a casual question searched costs tokens. Ties go to the later (stricter) floor.
    floors = tr.question_floors(sets, best_c, best_bw)
    keeps = [f for f in GRID_QUESTION_FLOOR if floors[f][1] >= floors[GRID_QUESTION_FLOOR[0]][1]]
    floor = max(reversed(keeps), key=lambda f: floors[f][0])
    log("question rule floor (accuracy, memory recall): "
        + ", ".join(f"{f}: {a:.4f} {r:.4f}" for f, (a, r) in floors.items()) + f" -> {floor}")
    all_msgs = [m for _, ms in sets for m in ms]
    dv, head_m, head_c = tr.fit(all_msgs, best_c, best_bw)
    names = dv.get_feature_names_out()
    weights = {str(n): (float(a), float(b)) for n, a, b in zip(names, head_m.coef_[0], head_c.coef_[0]) if a or b}
    provenance = {
        "script": "benchmarks/tune_gate.py",
        "trained_on": [n for n, _ in sets] + (["TREC CAsT 2019-2020 and iKAT 2023 train (memory head, pattern "
                                                "features only)"] if best_bw > 0 else []),
        "never_seen": [p.name for split in HELD_OUT for p in MESSAGE_FILES[split]] + ["CAsT 2021-2022", "iKAT 2023 test"],
        "messages": len(all_msgs), "binary_examples": len(tr.btexts), "features": len(weights),
        "min_count": MIN_COUNT, "C": best_c, "cast_ikat_weight": best_bw,
        "leave_one_set_out_accuracy": {f"C={c} cast_ikat_weight={bw}": round(a, 4) for (c, bw), a in lofo.items()},
        "pattern_constants": "the gate block of chatrecall/core/_tuned.py at training time",
        "question_rule": {"floor": floor, "chosen_by": "highest leave-one-set-out accuracy at the memory recall "
                          "of floor 0", "leave_one_set_out_accuracy_and_memory_recall": {
                              str(f): [round(a, 4), round(r, 4)] for f, (a, r) in floors.items()}},
    }
    router = LinearRouter(weights, (float(head_m.intercept_[0]), float(head_c.intercept_[0])), provenance,
                          question_floor=floor)
    return router, provenance


def compare_sets(gate: Gate, candidates: list[Path], log: Any = print,
                 tune: list[Path] | None = None) -> dict[str, Any]:
    """Should candidate message sets join the tune split? Decided on the tune split only.

    First the current default gate scores each candidate set (a blind check: it was never trained on
    them). Then leave-one-set-out over the current tune sets, at the current model's ``C`` and CAsT / iKAT
    weight: each set is scored by a combiner trained on the other sets, without and then with the
    candidates in training. With two or more candidates (written apart), each candidate is held out too,
    scored without (tune sets only) and with the other candidates in training: ``mean_all`` averages
    over every set, so a form the tune sets lack can count. The held-out splits play no part.
    ``tune``: these sets instead of the whole tune split (tests).
    """
    from chatrecall.core._gate_model import load_default_router

    sets = _tune_sets() if tune is None else [(p.name, load_messages(p)) for p in tune]
    cands = [(p.name, load_messages(p)) for p in candidates]
    prov = load_default_router().provenance
    c, bw = float(prov["C"]), float(prov["cast_ikat_weight"])
    default = Gate()
    out: dict[str, Any] = {"C": c, "cast_ikat_weight": bw, "blind_check": {}, "per_set": {}}
    for name, msgs in cands:
        out["blind_check"][name] = route_metrics(msgs, lambda t: default.decide(t).route.value)
        out["blind_check"][name].pop("errors", None)
        log(f"current gate on {name} (never trained on): accuracy {out['blind_check'][name]['accuracy']:.3f}")
    tr = _Trainer(gate, sets + cands)
    rows = {"without": tr.leave_one_set_out(sets, c, bw),
            "with": tr.leave_one_set_out(sets, c, bw, [m for _, ms in cands for m in ms])}
    for (name, _), a0, a1 in zip(sets, rows["without"], rows["with"]):
        out["per_set"][name] = (round(a0, 4), round(a1, 4))
        log(f"{name}: {a0:.4f} -> {a1:.4f}")
    out["mean"] = {k: round(float(np.mean(v)), 4) for k, v in rows.items()}
    log(f"leave-one-set-out mean over {len(sets)} tune sets: {out['mean']['without']:.4f} -> {out['mean']['with']:.4f}")
    if len(cands) > 1:
        # The tune sets cannot credit forms they hardly hold. With several candidates (different writers),
        # each candidate is also held out: scored by a combiner trained on the tune sets alone, then on the
        # tune sets plus the other candidates. Do the forms learned from one writer carry to another's?
        base = tr.fit([m for _, ms in sets for m in ms], c, bw)
        held = {"without": [tr.accuracy(base, ms) for _, ms in cands],
                "with": tr.leave_one_set_out(cands, c, bw, [m for _, ms in sets for m in ms])}
        for (name, _), a0, a1 in zip(cands, held["without"], held["with"]):
            out["per_set"][name] = (round(a0, 4), round(a1, 4))
            log(f"{name} (candidate, held out): {a0:.4f} -> {a1:.4f}")
        out["mean_all"] = {k: round(float(np.mean(rows[k] + held[k])), 4) for k in rows}
        log(f"mean over the {len(sets)} tune sets and {len(cands)} candidates, each held out: "
            f"{out['mean_all']['without']:.4f} -> {out['mean_all']['with']:.4f}")
    return out


def write_model(router: LinearRouter) -> None:
    MODEL_PATH.write_text(json.dumps(router.to_json(), separators=(",", ":"), sort_keys=True) + "\n",
                          encoding="utf-8")


def write_tuned(params: dict[str, Any]) -> None:
    block = (
        "# BEGIN gate (generated by benchmarks/tune_gate.py)\n"
        "# Chosen by coordinate descent on the gate TUNE split only: benchmarks/data/gate_messages_tune*.jsonl,\n"
        "# TREC CAsT 2019-2020, iKAT 2023 train. Validation (gate_messages_validation.jsonl, CAsT 2021-2022,\n"
        "# iKAT 2023 test) was never used to choose them: benchmarks/results/gate_routes.md.\n"
        "#: Multiplier per gate pattern category (missing = 1.0).\n"
        f"GATE_CATEGORY_WEIGHTS = {json.dumps(params['category_weights'], sort_keys=True)}\n"
        "#: Net memory / corpus score needed to search memory / the corpus.\n"
        f"GATE_MEMORY_THRESHOLD = {params['memory_threshold']!r}\n"
        f"GATE_CORPUS_THRESHOLD = {params['corpus_threshold']!r}\n"
        "#: Extra corpus score needed for 'both' when memory is searched anyway.\n"
        f"GATE_BOTH_MARGIN = {params['both_margin']!r}\n"
        "# END gate\n"
    )
    text = TUNED.read_text(encoding="utf-8")
    pat = re.compile(r"# BEGIN gate .*?# END gate\n", re.S)
    text = pat.sub(lambda _m: block, text) if pat.search(text) else text.rstrip("\n") + "\n\n\n" + block
    TUNED.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", action="store_true", help="only report the current constants")
    ap.add_argument("--model", action="store_true", help="keep the pattern constants, retrain the combiner")
    ap.add_argument("--compare-sets", nargs="+", type=Path, metavar="JSONL",
                    help="leave-one-set-out on the tune split without / with these message sets in training")
    args = ap.parse_args(argv)
    if not (args.report or args.model or args.compare_sets):
        params = tune()
        print("chosen on tune split:", params)
        write_tuned(params)
    import importlib

    import chatrecall.core._gate_model as gate_model
    import chatrecall.core._tuned as tuned

    importlib.reload(tuned)  # score the values just written (the module was imported before they were)
    cfg = GateConfig(category_weights=tuned.GATE_CATEGORY_WEIGHTS, memory_threshold=tuned.GATE_MEMORY_THRESHOLD,
                     corpus_threshold=tuned.GATE_CORPUS_THRESHOLD, both_margin=tuned.GATE_BOTH_MARGIN, learned=False)
    if args.compare_sets:
        compare_sets(Gate(cfg), args.compare_sets)
        return 0
    splits = ("tune", *HELD_OUT)
    patterns_only = run_routes(Gate(cfg), data_dir=DATA, splits=splits)
    if not args.report:
        router, provenance = train_model(Gate(cfg))
        print("combiner:", provenance)
        write_model(router)
        gate_model._DEFAULT = None  # load the file just written
    res = run_routes(Gate(dataclasses.replace(cfg, learned=True)), data_dir=DATA, splits=splits)
    res["patterns_only"] = {k: patterns_only[k] for k in ("messages", "cast", "ikat")}
    for split in [*res["messages"].values(), *res["patterns_only"]["messages"].values()]:
        split.pop("errors", None)  # misrouted messages are not kept: validation texts must not steer patterns
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    md = ("# Gate routes: tune vs held out\n\nConstants and the learned combiner chosen on the tune split only "
          "(`benchmarks/tune_gate.py`); tune rows are in-sample, validation and blind rows are held out "
          "(never tuned on).\n\n## Default gate (learned combiner)\n\n" + render_markdown(res)
          + "\n## Patterns only (`GateConfig(learned=False)`), same run\n\n"
          + render_markdown(res["patterns_only"]))
    OUT.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
