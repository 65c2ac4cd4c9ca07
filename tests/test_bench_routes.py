"""The gate's route evaluation: metrics on known cases, splits kept apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatrecall._bench._routes import MESSAGE_FILES, LabelledMessage, load_messages, load_split, route_metrics
from chatrecall.core import Gate, InvalidInputError


def test_route_metrics_on_a_known_case() -> None:
    msgs = [LabelledMessage("a", "memory", "personal"), LabelledMessage("b", "corpus", "general"),
            LabelledMessage("c", "both", "mixed"), LabelledMessage("d", "none", "casual")]
    pred = {"a": "memory", "b": "both", "c": "memory", "d": "none"}
    m = route_metrics(msgs, pred.__getitem__)
    assert m["accuracy"] == 0.5
    assert m["memory_precision"] == pytest.approx(2 / 3) and m["memory_recall"] == 1.0
    assert m["corpus_precision"] == 1.0 and m["corpus_recall"] == 0.5
    assert m["casual_skip_rate"] == 1.0 and m["memory_recall_personal"] == 1.0
    assert [e["text"] for e in m["errors"]] == ["b", "c"]


def test_bad_file_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text(json.dumps({"text": "hi", "route": "none"}) + "\n" + json.dumps({"text": "x", "route": "maybe"}) + "\n")
    with pytest.raises(InvalidInputError, match=r"x\.jsonl:2"):
        load_messages(f)


def test_tune_and_validation_sets_do_not_overlap() -> None:
    tune = {m.text.casefold() for m in load_split("tune")}
    val = {m.text.casefold() for m in load_split("validation")}
    assert len(tune) > 500 and len(val) > 250
    assert not tune & val
    assert all(p.exists() for p in (*MESSAGE_FILES["tune"], *MESSAGE_FILES["validation"]))


def test_context_split_holds_the_corpus_context_questions_labelled_both() -> None:
    from chatrecall._bench._context import load_context_set

    msgs = load_split("context")
    questions = [s.question for p in MESSAGE_FILES["context"] for s in load_context_set(p).scenarios]
    tune = {m.text.casefold() for m in load_split("tune")}
    assert [m.text for m in msgs] == [q for q in questions if q.casefold() not in tune]
    assert len(msgs) >= 75
    assert {(m.route, m.kind) for m in msgs} == {("both", "mixed")}


def test_gate_on_the_tune_split_answers_personal_questions() -> None:
    gate = Gate()
    m = route_metrics(load_split("tune"), lambda t: gate.decide(t).route.value)
    # Guards against regressions on the data the constants were chosen on (in-sample by construction).
    assert m["memory_recall_personal"] >= 0.85
    assert m["memory_precision"] >= 0.95
    assert m["casual_skip_rate"] >= 0.95


def test_compare_sets_trains_with_the_candidates_and_scores_only_tune_sets(tmp_path: Path) -> None:
    # benchmarks/tune_gate.py --compare-sets: a candidate set joins training in the "with" column only. A copy
    # of a tune set as the candidate puts that set's own messages in training, so its held-out score must rise.
    pytest.importorskip("sklearn")
    import sys

    repo = Path(__file__).resolve().parents[1]
    if not (repo.parent / "shared" / "data" / "gating" / "cast_needs_history_labels.jsonl").exists():
        pytest.skip("needs ../shared/data/gating (the CAsT / iKAT tune rows)")
    sys.path.insert(0, str(repo / "benchmarks"))
    try:
        import tune_gate
    finally:
        sys.path.remove(str(repo / "benchmarks"))
    from chatrecall.core import GateConfig

    tune = [p for p in MESSAGE_FILES["tune"] if p.name in {"gate_messages_tune22.jsonl", "gate_messages_tune23.jsonl",
                                                          "gate_messages_tune24.jsonl"}]
    source = tune[-1]
    copy = tmp_path / "candidate.jsonl"
    copy.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    out = tune_gate.compare_sets(Gate(GateConfig(learned=False)), [copy], log=lambda *_: None, tune=tune)
    assert set(out["per_set"]) == {p.name for p in tune}
    without, with_copy = out["per_set"][source.name]
    assert with_copy > without and with_copy >= 0.95
    assert 0.0 < out["blind_check"]["candidate.jsonl"]["accuracy"] <= 1.0
    assert "mean_all" not in out  # one candidate is never held out: nothing else of its kind could teach it
    # Two candidates: each is held out too, without (tune sets only) and with the other in training. Two
    # copies of one set: the held-out copy is learned from the other copy, so its score must rise.
    twin = tmp_path / "twin.jsonl"
    twin.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    out2 = tune_gate.compare_sets(Gate(GateConfig(learned=False)), [copy, twin], log=lambda *_: None,
                                  tune=tune[:-1])
    assert set(out2["per_set"]) == {p.name for p in tune[:-1]} | {"candidate.jsonl", "twin.jsonl"}
    for name in ("candidate.jsonl", "twin.jsonl"):
        without, with_twin = out2["per_set"][name]
        assert with_twin > without and with_twin >= 0.95
    assert out2["mean_all"]["with"] > out2["mean_all"]["without"]

