"""The corpus-context harness (``chatrecall._bench._context``) on a small set, with the fakes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chatrecall._bench._context import DATA_DIR, ContextHarness, Outcome, load_context_set, summarise
from chatrecall.testing import HashEmbedder


def _write(path: Path, **over: Any) -> Path:
    data = {
        "documents": [{"id": "D1", "text": "Titration practical errors: burette meniscus, air bubbles, end point."},
                      {"id": "D2", "text": "Chromatography practical errors: pen baseline, solvent above baseline."}],
        "scenarios": [{"id": "S1", "kind": "implied", "question": "which practical errors should I expect?",
                       "gold_docs": ["D1"], "memory_evidence": ["titration practical on friday"],
                       "sessions": [[{"role": "user", "text": "titration practical on friday"},
                                     {"role": "assistant", "text": "good luck"}]]}],
    }
    data.update(over)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_shipped_files_load_and_hold_what_the_harness_reports() -> None:
    sets = [load_context_set(p) for p in sorted(DATA_DIR.glob("*.json"))]
    assert len(sets) >= 2
    for cs in sets:
        kinds = [s.kind for s in cs.scenarios]
        assert kinds.count("implied") == 26 and kinds.count("explicit") == 14
        assert len({s.sid for s in cs.scenarios}) == 40


def test_a_gold_id_that_is_not_a_document_fails(tmp_path: Path) -> None:
    bad = _write(tmp_path / "x.json", scenarios=[{"id": "S1", "kind": "implied", "question": "q?",
                                                  "gold_docs": ["D9"], "sessions": []}])
    with pytest.raises(ValueError, match="D9"):
        load_context_set(bad)


def test_harness_ranks_gold_documents_per_configuration(tmp_path: Path) -> None:
    cs = load_context_set(_write(tmp_path / "tiny.json"))
    h = ContextHarness([cs], embedder=HashEmbedder(), store="memory")
    try:
        (before,) = h.run(items=0)["tiny"]
        (after,) = h.run(items=2)["tiny"]
        assert (before.sid, before.kind, after.sid, after.kind) == ("S1", "implied", "S1", "implied")
        assert after.rank == 1 and after.injected  # the memory names the titration practical
        assert after.memory  # and reaches the prompt itself
        assert before.rank != 1  # the message alone does not single it out
        # asked in the session that named the topic: the turn is in the recent window, not in memory
        assert cs.scenarios[0].evidence_session() == 0
        (alone,) = h.run(items=2, recent=False, ask_in="evidence")["tiny"]
        (recent,) = h.run(items=0, recent=True, ask_in="evidence")["tiny"]
        assert recent.rank == 1 and alone.rank != 1
        with pytest.raises(ValueError, match="ask_in='old'"):
            h.run(items=0, ask_in="old")
        assert h.engine.retrieval_config == h.base_config  # restored after each run
        h.run(items=0, probe=False, mix="score")
        assert (h.engine.retrieval_config, h.engine.budget_config) == (h.base_config, h.base_budget)
    finally:
        h.close()


def test_general_questions_count_the_memories_they_cost(tmp_path: Path) -> None:
    cs = load_context_set(_write(tmp_path / "tiny.json"))
    h = ContextHarness([cs], embedder=HashEmbedder(), store="memory")
    try:
        g = h.run_general(["how do plants make sugar from light?", "how do i avoid errors in my titration practical on friday?"])
        assert g.n == 2 and g.probed == 2  # every corpus-only turn looks in memory first
        assert g.with_memory == 1 and g.memory_tokens > 0 and g.tokens >= g.memory_tokens  # only the second
        assert g.p50_ms > 0
        off = h.run_general(["how do i avoid errors in my titration practical on friday?"], probe=False)
        assert off.probed == 0
        assert h.engine.retrieval_config == h.base_config
    finally:
        h.close()


def test_summarise() -> None:
    rows = [Outcome("a", "implied", 1, True, "both", True), Outcome("b", "implied", 3, True, "both"),
            Outcome("c", "explicit", None, False, "corpus")]
    s = summarise(rows)
    assert s["n"] == 3
    assert s["hit1"] == pytest.approx(1 / 3) and s["hit3"] == pytest.approx(2 / 3)
    assert s["mrr"] == pytest.approx((1 + 1 / 3) / 3) and s["injected"] == pytest.approx(2 / 3)
    assert s["memory"] == pytest.approx(1 / 3)
    assert summarise([])["n"] == 0


def _tune_usefulness(monkeypatch: pytest.MonkeyPatch) -> Any:
    import importlib.util
    import sys

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("tune_usefulness", root / "benchmarks" / "tune_usefulness.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "tune_usefulness", mod)
    spec.loader.exec_module(mod)
    return mod


def test_usefulness_choice_keeps_the_general_cap_and_prefers_the_previous_values_on_ties(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from chatrecall._bench._context import GeneralOutcome

    mod = _tune_usefulness(monkeypatch)
    full, half = Outcome("a", "implied", 1, True, "both", True), Outcome("b", "implied", 1, True, "both", False)

    def runs(rows: list[Outcome]) -> dict[str, dict[str, list[Outcome]]]:
        return {m: {"set_a": rows} for m in mod.MODES}

    grid = {(0.3, 0.35): runs([full, full]), (0.4, 0.35): runs([full, half]), mod.PREVIOUS: runs([full, half]),
            (0.5, 0.5): runs([half, half])}
    cheap, costly = GeneralOutcome(100, 5, 0, 0, 0), GeneralOutcome(100, 40, 0, 0, 0)
    general = {c: costly if c == (0.3, 0.35) else cheap for c in grid}
    assert mod.choose(grid, general, ["set_a"]) == mod.PREVIOUS  # (0.3, 0.35) is best but over the cap
    general[(0.3, 0.35)] = cheap
    assert mod.choose(grid, general, ["set_a"]) == (0.3, 0.35)


def test_usefulness_choice_keeps_the_shipped_values_on_a_flat_objective(monkeypatch: pytest.MonkeyPatch) -> None:
    # stop 50: complete was flat in strong_corpus_score 0.40-0.55, and the old tie order (previous, then higher) moved
    # the shipped 0.40 to 0.55
    from chatrecall._bench._context import GeneralOutcome

    mod = _tune_usefulness(monkeypatch)
    row = Outcome("a", "implied", 1, True, "both", True)
    flat = {m: {"set_a": [row]} for m in mod.MODES}
    grid = {mod.CURRENT: flat, (mod.CURRENT[0], 0.55): flat, mod.PREVIOUS: flat}
    general = {c: GeneralOutcome(100, 5, 0, 0, 0) for c in grid}
    assert mod.CURRENT != mod.PREVIOUS and mod.CURRENT[1] < 0.55
    assert mod.choose(grid, general, ["set_a"]) == mod.CURRENT


def test_usefulness_tuner_rewrites_only_its_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _tune_usefulness(monkeypatch)
    src = mod.TUNED.read_text(encoding="utf-8")
    target = tmp_path / "_tuned.py"
    target.write_text(src, encoding="utf-8")
    monkeypatch.setattr(mod, "TUNED", target)
    mod.write_tuned((0.35, 0.5), "test", 80)
    out = target.read_text(encoding="utf-8")
    assert out.count("# BEGIN usefulness") == 1 and out.count("# END usefulness") == 1
    assert out.split("# BEGIN usefulness")[0] == src.split("# BEGIN usefulness")[0]  # the other blocks untouched
    ns: dict[str, object] = {}
    exec(compile(out, str(target), "exec"), ns)
    assert (ns["USEFUL_SCORE"], ns["STRONG_CORPUS_SCORE"]) == (0.35, 0.5)


def test_replace_tuned_block_needs_the_block(tmp_path: Path) -> None:
    from chatrecall._bench._common import replace_tuned_block

    f = tmp_path / "_tuned.py"
    f.write_text("A = 1\n# BEGIN x (generated by s.py)\nX = 1\n# END x\nB = 2\n", encoding="utf-8")
    replace_tuned_block(f, "x", "s.py", "X = 2\n")
    assert f.read_text(encoding="utf-8") == "A = 1\n# BEGIN x (generated by s.py)\nX = 2\n# END x\nB = 2\n"
    with pytest.raises(SystemExit, match="no y block"):
        replace_tuned_block(f, "y", "s.py", "Y = 1\n")
    with pytest.raises(SystemExit, match="no x block"):  # the owner on the BEGIN line must match too
        replace_tuned_block(f, "x", "other.py", "X = 3\n")


def test_general_questions_are_the_held_out_corpus_messages() -> None:
    from chatrecall._bench._context import general_questions
    from chatrecall._bench._routes import load_split

    qs = general_questions()
    assert len(qs) > 300 and len(set(qs)) > 0.9 * len(qs)
    tune = {m.text.casefold() for m in load_split("tune")}
    assert not any(q.casefold() in tune for q in qs)  # never a tune-split message
