"""The chat scenarios (benchmarks/data/chat_scenarios) are well formed, and both harnesses read them alike."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from chatrecall._bench._common import chat_scenario_turns, load_chat_scenarios
from chatrecall.core._validate import check_timestamp

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "chat_scenarios"
FILES = sorted(p for p in DATA.glob("*.jsonl") if not p.name.startswith("repeats"))
REPEATS = DATA / "repeats_heldout.jsonl"


def _script(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)
    spec.loader.exec_module(mod)
    return mod


def test_there_is_a_development_file_and_four_held_out_ones() -> None:
    assert [p.name for p in FILES] == ["facts_heldout.jsonl", "facts_heldout2.jsonl", "facts_heldout3.jsonl",
                                       "updates_dev.jsonl"]
    assert REPEATS.is_file()


def test_every_repeated_question_chat_holds_its_answer_and_the_earlier_asking() -> None:
    scen = load_chat_scenarios(REPEATS)
    assert len(scen) == 40 and len({s["id"] for s in scen}) == 40
    assert sum(s["kind"] == "repeat_update" for s in scen) == 26
    for sc in scen:
        assert sc["kind"] in {"repeat_update", "repeat_control"}, sc["id"]
        assert len(sc["sessions"]) == len(sc["session_dates"]) >= 3, sc["id"]
        dates = [check_timestamp(d) for d in sc["session_dates"]]
        assert all(a is not None and b is not None and a < b for a, b in zip(dates, dates[1:])), sc["id"]
        s, t = sc["earlier_question"]
        assert sc["sessions"][s][t]["role"] == "user", sc["id"]
        # gold: every turn holding the current value (assistant turns that restate it included); stale: the old one
        gold, stale = {tuple(g) for g in sc["gold"]}, {tuple(g) for g in sc["stale"]}
        assert gold and not gold & stale and all(sc["sessions"][s][t]["content"] for s, t in gold | stale), sc["id"]
        assert bool(stale) == (sc["kind"] == "repeat_update"), sc["id"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_gold_turn_is_a_user_turn_holding_the_answer(path: Path) -> None:
    scen = load_chat_scenarios(path)
    assert len(scen) == 90 and len({s["id"] for s in scen}) == 90
    for sc in scen:
        assert sc["kind"] in {"fact", "update", "control"}, sc["id"]
        assert len(sc["sessions"]) == len(sc["session_dates"]) >= 3, sc["id"]
        dates = [check_timestamp(d) for d in sc["session_dates"]]
        assert all(a is not None and b is not None and a < b for a, b in zip(dates, dates[1:])), sc["id"]
        for s, t in sc["gold"]:
            turn = sc["sessions"][s][t]
            assert turn["role"] == "user" and sc["answer"].casefold() in turn["content"].casefold(), sc["id"]
        assert bool(sc.get("stale")) == (sc["kind"] == "update"), sc["id"]
        for s, t in sc.get("stale", []):
            assert sc["sessions"][s][t]["role"] == "user", sc["id"]
            assert (s, t) < min(tuple(g) for g in sc["gold"]), sc["id"]  # the replaced fact comes first


def test_a_chat_is_laid_out_turn_by_turn_at_its_session_dates() -> None:
    sc = load_chat_scenarios(DATA / "updates_dev.jsonl")[0]
    keys, texts, meta = chat_scenario_turns(sc)
    assert len(keys) == len(texts) == sum(len(s) for s in sc["sessions"]) and keys[0] == "0:0"
    assert texts[0] == sc["sessions"][0][0]["content"] and meta[0]["role"] == sc["sessions"][0][0]["role"]
    # a minute apart inside a session, each session at its own date
    assert meta[1]["timestamp"] - meta[0]["timestamp"] == 60.0
    first_of_1 = len(sc["sessions"][0])
    assert keys[first_of_1] == "1:0" and meta[first_of_1]["timestamp"] == check_timestamp(sc["session_dates"][1])
    with pytest.raises(ValueError, match="no date"):
        chat_scenario_turns({**sc, "session_dates": [None] * len(sc["sessions"])})


def test_the_scorer_wants_the_current_answer_above_the_replaced_fact(monkeypatch: pytest.MonkeyPatch) -> None:
    evaluate = _script("eval_chats", monkeypatch)
    assert evaluate._above(["1:0", "0:2"], {"1:0"}, {"0:2"})
    assert not evaluate._above(["0:2", "1:0"], {"1:0"}, {"0:2"})
    assert not evaluate._above(["0:2", None], {"1:0"}, {"0:2"})
    assert evaluate._above(["0:1", "1:0"], {"1:0"}, set())


CHANGES = sorted((ROOT / "benchmarks" / "data" / "changes_replaced").glob("*.jsonl"))


@pytest.mark.parametrize("path", CHANGES, ids=lambda p: p.name)
def test_every_replaced_change_chat_points_at_user_turns(path: Path) -> None:
    """Stop 44's held-out sets of changes naming what they replace (three files, each written by another agent
    before the rule it judged; docs/benchmarks.md, "R1c"): updates have their stale turn first, controls the turn
    that must not rise above the gold one."""
    scen = load_chat_scenarios(path)
    assert len(scen) >= 36 and len({s["id"] for s in scen}) == len(scen)
    for sc in scen:
        assert sc["kind"] in {"update", "control"}, sc["id"]
        dates = [check_timestamp(d) for d in sc["session_dates"]]
        assert len(dates) == len(sc["sessions"]) >= 2, sc["id"]
        assert all(a is not None and b is not None and a < b for a, b in zip(dates, dates[1:])), sc["id"]
        marked = [*sc["gold"], *sc["stale"], *sc.get("control_turn", [])]
        assert all(sc["sessions"][s][t]["role"] == "user" for s, t in marked), sc["id"]
        if sc["kind"] == "update":
            assert sc["stale"] and max(map(tuple, sc["stale"])) < min(map(tuple, sc["gold"])), sc["id"]
        else:
            assert not sc["stale"] and sc["control_turn"], sc["id"]
    assert sum(sc["kind"] == "update" for sc in scen) >= 20
