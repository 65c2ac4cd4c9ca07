"""``chatrecall bench replay``: conversations fed turn by turn, questions asked through ``retrieve``.

Tiny LoCoMo- and LongMemEval-shaped files written here, the hash embedder and
the in-memory store; cases built so the injected evidence, the tokens and the
routes are known. One run on the real model and embedded Chroma.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from chatrecall._bench._common import default_data_dir
from chatrecall._bench._replay import detect_format, equal_recall, load_replay, run_replay
from chatrecall.core import ApproxTokenCounter, HashEmbedder

DATA = default_data_dir()

S1 = [
    ("Ana", "Hi Ben! I adopted a beagle puppy called Rex yesterday."),
    ("Ben", "My sister lives in Porto and teaches chemistry."),  # evidence with no word of the question
    ("Ana", "Which marathon is Ana training for in October? Nobody knows yet."),  # decoy: the question's words
    ("Ben", "I started learning the violin last week."),
]
S2 = [
    ("Ana", "Rex chewed my running shoes this morning."),
    ("Ben", "My violin teacher says I improve quickly."),
    ("Ana", "I am training for the Lisbon marathon."),  # evidence, in the last session's recent window
]
QUESTION = "Which marathon is Ana training for in October?"


def _locomo_file(tmp_path: Path) -> Path:
    def sess(n: int, turns: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [{"speaker": s, "dia_id": f"D{n}:{i + 1}", "text": t} for i, (s, t) in enumerate(turns)]

    rec = {
        "sample_id": "conv-t",
        "conversation": {"speaker_a": "Ana", "speaker_b": "Ben",
                         "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": sess(1, S1),
                         "session_2_date_time": "10:37 am on 27 June, 2023", "session_2": sess(2, S2)},
        "qa": [{"question": QUESTION, "answer": "Lisbon", "evidence": ["D2:3", "D1:2"], "category": 4},
               {"question": "What does Ben learn?", "answer": "violin", "evidence": ["D1:4"], "category": 1}],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([rec]), encoding="utf-8")
    return path


def _lme_file(tmp_path: Path) -> Path:
    def sess(*user: str, answer: int | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i, u in enumerate(user):
            out.append({"role": "user", "content": u, "has_answer": i == answer})
            out.append({"role": "assistant", "content": "Sure, here is some help with that."})
        return out

    hay = [sess("Any tips for growing basil indoors?", "My basil keeps wilting."),
           sess("I just bought a red Trek road bike for commuting.", "What tyre pressure should I use?", answer=0),
           sess("Recommend a sci-fi novel please.", "I liked Dune a lot.")]
    base = {"question_type": "single-session-user", "answer": "red", "question_date": "2023/05/30 (Tue) 10:00",
            # not in date order: the replay feeds s_c first
            "haystack_dates": ["2023/05/10 (Wed) 09:00", "2023/05/20 (Sat) 18:30", "2023/05/01 (Mon) 02:21"],
            "haystack_session_ids": ["s_a", "answer_s_b", "s_c"], "haystack_sessions": hay,
            "answer_session_ids": ["answer_s_b"]}
    asst_only = json.loads(json.dumps(base))
    for t in asst_only["haystack_sessions"][1]:
        t.pop("has_answer", None)
    asst_only["haystack_sessions"][1][1]["has_answer"] = True
    data = [{**base, "question_id": "q1", "question": "What colour is my new bike?"},
            {**base, "question_id": "q2_abs", "question": "What colour is my car?"},
            {**asst_only, "question_id": "q3", "question": "What did you tell me about tyres?"}]
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(data, fh)
    return path


def _tokens(texts: list[str]) -> int:
    count = ApproxTokenCounter().count
    return sum(count(t) for t in texts)


def test_recall_counts_evidence_in_the_recent_window_and_not_outside(tmp_path: Path) -> None:
    # The question's evidence: D2:3 (in the last session's recent window) and D1:2 (outside it, sharing no
    # word with the question); the decoy D1:3 repeats the question, so it is every ranker's top 1.
    path = _locomo_file(tmp_path)
    last = run_replay(path, embedder=HashEmbedder(), store="memory", ask_in="last", max_questions=1, chitchat=2,
                      details=True)
    new = run_replay(path, embedder=HashEmbedder(), store="memory", ask_in="new", max_questions=1, chitchat=2,
                     details=True)
    for res in (last, new):
        assert res["format"] == "locomo" and res["dataset"]["questions"] == 1
        assert res["dataset"]["turns_fed"] == 7 and res["dataset"]["records_stored"] == 7
    (d_last,), (d_new,) = last["details"], new["details"]
    window = d_last["lastN+topk_dense"]["window"]
    assert len(window) == 3, "the last session's three turns form the recent window"
    assert set(window) <= set(d_last["chatrecall"]["injected"]), "chatrecall injects the same window"
    assert d_last["chatrecall"]["recall"] >= 0.5 and d_last["chatrecall_always"]["recall"] >= 0.5
    assert d_new["lastN+topk_dense"]["window"] == [], "a new session has no recent window"
    decoy = d_new["lastN+topk_dense"]["ranked"][0]
    assert d_new["lastN+topk_chatrecall"]["ranked"][0] == decoy == d_last["lastN+topk_dense"]["ranked"][0]

    s_last, s_new = last["systems"], new["systems"]
    for fam in ("chatrecall", "dense"):
        assert s_last[f"last6+top1_{fam}"]["recall"] == 0.5, "window evidence counts, D1:2 outside does not"
        assert s_new[f"last6+top1_{fam}"]["recall"] == 0.0, "no window: the top 1 is the decoy"
        assert s_last[f"last6+top50_{fam}"]["recall"] == 1.0 == s_new[f"last6+top50_{fam}"]["recall"]
    for res in (last, new):
        cr, always = res["systems"]["chatrecall"], res["systems"]["chatrecall_always"]
        for m in (cr, always):
            assert math.isclose(sum(m[f"route_{r}"] for r in ("none", "memory", "corpus", "both")), 1.0)
            assert m["chitchat_messages"] == 2.0 and m["p95_ms"] >= m["p50_ms"] > 0
            assert 0.0 <= m["recall"] <= 1.0 and m["tokens_per_turn"] > 0
        assert always["route_memory"] == 1.0 and always["chitchat_route_none"] == 0.0
        ladder = [res["systems"][f"last6+top{k}_chatrecall"] for k in res["ladder"]]
        assert all(a["recall"] <= b["recall"] and a["tokens_per_turn"] <= b["tokens_per_turn"]
                   for a, b in zip(ladder, ladder[1:]))


def test_window_tokens_are_exact(tmp_path: Path) -> None:
    res = run_replay(_locomo_file(tmp_path), embedder=HashEmbedder(), store="memory", ask_in="last",
                     max_questions=1, chitchat=0, systems="lastN+topk_dense")
    assert set(res["systems"]) == {f"last6+top{k}_dense" for k in res["ladder"]}
    want = _tokens([f"{s}: {t}" for s, t in S2]) + _tokens([f"{S1[2][0]}: {S1[2][1]}"])
    assert res["systems"]["last6+top1_dense"]["tokens_per_turn"] == want
    assert res["systems"]["last6+top1_dense"]["recall"] == 0.5
    assert res["dataset"]["chitchat_messages"] == 0


def test_equal_recall_picks_the_cheapest_k_and_interpolates() -> None:
    ref = {"recall": 0.6, "tokens_per_turn": 100.0, "chitchat_tokens_per_turn": 50.0}

    def step(r: float, t: float) -> dict[str, float]:
        return {"recall": r, "tokens_per_turn": t, "chitchat_tokens_per_turn": t + 10}

    systems = {"chatrecall": ref, "last6+top1_chatrecall": step(0.3, 50), "last6+top2_chatrecall": step(0.5, 80),
               "last6+top3_chatrecall": step(0.7, 120), "last6+top1_dense": step(0.1, 40),
               "last6+top2_dense": step(0.2, 90)}
    rows = {r["baseline"].rsplit("_", 1)[1]: r for r in equal_recall(systems, n=6, ks=(1, 2, 3))}
    cr = rows["chatrecall"]
    assert cr["k"] == 3 and cr["reached"] and cr["token_ratio"] == pytest.approx(1.2)
    assert cr["baseline_tokens_interp"] == pytest.approx(100.0) and cr["token_ratio_interp"] == pytest.approx(1.0)
    assert cr["chitchat_baseline_tokens"] == 130
    dense = rows["dense"]
    assert not dense["reached"] and dense["k"] == 2 and math.isnan(dense["baseline_tokens_interp"])


def test_longmemeval_format_is_detected_and_fed_in_date_order(tmp_path: Path) -> None:
    path = _lme_file(tmp_path)
    fmt, cases, info = load_replay(path)
    assert fmt == "longmemeval" and info["skipped"] == {"abstention": 1, "assistant_only_evidence": 1}
    (case,) = cases
    assert [s.session_id for s in case.sessions] == ["s_c", "s_a", "answer_s_b"]
    assert len(case.turns) == 6 and all(t.role == "user" and t.message for t in case.turns)
    assert case.questions[0].evidence == ("answer_s_b#0",)
    _, (with_asst,), _ = load_replay(path, assistant_turns=True)
    assert len(with_asst.turns) == 12 and sum(t.message is None for t in with_asst.turns) == 6
    with pytest.raises(ValueError):
        detect_format([{"foo": 1}])

    res = run_replay(path, embedder=HashEmbedder(), store="memory", assistant_turns=True, chitchat=2)
    # 6 user turns + the repeated assistant answer once per session (identical text in a session is stored once)
    assert res["dataset"]["questions"] == 1 and res["dataset"]["records_stored"] == 9
    assert res["systems"]["last6+top50_dense"]["recall"] == 1.0
    assert res["systems"]["last6+top50_chatrecall"]["recall"] == 1.0
    assert res["systems"]["chatrecall"]["chitchat_messages"] == 2.0
    assert "recall_single-session-user" in res["systems"]["chatrecall"]


def test_cli_bench_replay_writes_json_and_markdown(tmp_path: Path) -> None:
    from chatrecall.cli import main

    out = tmp_path / "r" / "replay.json"
    rc = main(["bench", "replay", str(_locomo_file(tmp_path)), "--out", str(out), "--embedder", "hash",
               "--store", "memory", "--systems", "chatrecall,lastN+topk_chatrecall", "--chitchat", "1"])
    assert rc == 0
    saved = json.loads(out.read_text())
    assert saved["benchmark"] == "replay" and "machine" in saved
    assert [r["reference"] for r in saved["equal_recall"]] == ["chatrecall"]
    md = out.with_suffix(".md").read_text()
    assert "Equal recall" in md and "| chatrecall |" in md
    with pytest.raises(ValueError, match="unknown system"):
        run_replay(_locomo_file(tmp_path), embedder=HashEmbedder(), store="memory", systems="dense_only")


@pytest.mark.model
@pytest.mark.skipif(not (DATA / "locomo" / "locomo_dev.json").exists(), reason="shared LoCoMo data not present")
def test_replay_on_real_model_and_chroma(st_embedder: Any) -> None:
    pytest.importorskip("chromadb")
    res = run_replay(DATA / "locomo" / "locomo_dev.json", limit=1, max_questions=12, chitchat=3, store="chroma",
                     embedder=st_embedder)
    assert "ChromaStore" in res["store"] and res["dataset"]["questions"] == 12
    s = res["systems"]
    assert s["last6+top50_chatrecall"]["recall"] >= s["last6+top50_dense"]["recall"] - 0.2
    assert s["last6+top50_chatrecall"]["recall"] > 0.4
    assert 0 < s["chatrecall"]["tokens_per_turn"] < s["last6+top50_chatrecall"]["tokens_per_turn"]
    assert len(res["equal_recall"]) == 4
