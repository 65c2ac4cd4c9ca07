"""Smoke versions of every benchmark harness, so they never rot.

Tiny synthetic data in the real formats (plus the shared data files' loaders
when ``../shared/data`` is present) and the hash embedder; one test runs the
real parts (MiniLM, embedded Chroma, langchain-chroma) on a few turns.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from chatrecall._bench._common import default_data_dir, ndcg_official, render_markdown, write_outputs
from chatrecall._bench._locomo import load_locomo, parse_locomo_date, run_locomo, turn_text
from chatrecall._bench._longmemeval import load_longmemeval, parse_lme_date, run_longmemeval, score_ranking
from chatrecall._bench._speed import perturb, run_speed
from chatrecall.core import HashEmbedder

DATA = default_data_dir()
SYSTEMS = ("chatrecall", "chatrecall_hybrid", "chatrecall_recency", "chatrecall_relevance", "chatrecall_keyword",
           "chatrecall_entity", "chatrecall_graph", "dense_only", "bm25_only", "langchain_chroma")


def _locomo_file(tmp_path: Path) -> Path:
    s1 = [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I adopted a puppy called Rex yesterday."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! What breed is Rex?"},
        {"speaker": "Ana", "dia_id": "D1:3", "text": "He is a beagle, very curious.",
         "img_url": ["x"], "blip_caption": "a photo of a small dog on a couch"},
        {"speaker": "Ben", "dia_id": "D1:4", "text": "I started learning the violin last week."},
    ]
    s2 = [
        {"speaker": "Ana", "dia_id": "D2:1", "text": "Rex chewed my running shoes this morning."},
        {"speaker": "Ben", "dia_id": "D2:2", "text": "My violin teacher says I improve quickly."},
        {"speaker": "Ana", "dia_id": "D2:3", "text": "I am training for the Lisbon marathon in October."},
    ]
    rec = {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": s1,
            "session_2_date_time": "10:37 am on 27 June, 2023", "session_2": s2,
            "session_3_date_time": "9:00 am on 1 July, 2023",  # more dates than sessions (conv-26 defect)
        },
        "qa": [
            {"question": "When did Ana adopt Rex?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
            {"question": "What breed is Ana's dog?", "answer": "beagle", "evidence": ["D1:1; D1:3"], "category": 1},
            {"question": "What instrument does Ben learn?", "answer": "violin", "evidence": ["D1:4", "D:2:2"],
             "category": 4},
            {"question": "Which marathon is Ana training for?", "answer": "Lisbon", "evidence": ["D2:3", "D9:9"],
             "category": 4},
            {"question": "What did Ben adopt?", "adversarial_answer": "a puppy", "evidence": ["D1:1"], "category": 5},
            {"question": "Unanswerable?", "answer": "-", "evidence": [], "category": 3},
        ],
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

    hay = [
        sess("Any tips for growing basil indoors?", "My basil keeps wilting."),
        sess("I just bought a red Trek road bike for commuting.", "What tyre pressure should I use?", answer=0),
        sess("Recommend a sci-fi novel please.", "I liked Dune a lot."),
    ]
    base = {"question_type": "single-session-user", "answer": "red", "question_date": "2023/05/30 (Tue) 10:00",
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/10 (Wed) 18:30", "2023/05/20 (Sat) 02:21"],
            "haystack_session_ids": ["s_a", "answer_s_b", "s_c"], "haystack_sessions": hay,
            "answer_session_ids": ["answer_s_b"]}
    asst_only = json.loads(json.dumps(base))
    for t in asst_only["haystack_sessions"][1]:
        t.pop("has_answer", None)
    asst_only["haystack_sessions"][1][1]["has_answer"] = True
    data = [
        {**base, "question_id": "q1", "question": "What colour is my new bike?"},
        {**base, "question_id": "q2_abs", "question": "What colour is my car?"},
        {**asst_only, "question_id": "q3", "question_type": "single-session-assistant",
         "question": "What did you tell me about tyres?"},
    ]
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(data, fh)
    return path


def _in_unit(x: float) -> bool:
    return isinstance(x, float) and 0.0 <= x <= 1.0


# ---------------------------------------------------------------- LoCoMo
def test_locomo_parsing_handles_data_defects(tmp_path: Path) -> None:
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == 1683554160.0
    assert "[shares a photo of a small dog" in turn_text({"speaker": "A", "text": "hi", "blip_caption": "a photo of a small dog"})
    assert turn_text({"speaker": "A", "text": "hi", "blip_caption": "sunset"}).endswith("[shares a photo of sunset]")
    (conv,) = load_locomo(_locomo_file(tmp_path))
    assert conv.keys[:2] == ["D1:1", "D1:2"] and len(conv.keys) == 7
    assert conv.texts[0].startswith("Ana: ") and "[shares a photo of a small dog" in conv.texts[2]
    evidence = {q.question: q.evidence for q in conv.questions}
    assert evidence["What breed is Ana's dog?"] == ["D1:1", "D1:3"], "'D1:1; D1:3' is split"
    assert evidence["What instrument does Ben learn?"] == ["D1:4", "D2:2"], "'D:2:2' is read as D2:2"
    assert evidence["Which marathon is Ana training for?"] == ["D2:3"], "ids absent from the conversation are dropped"
    assert conv.skipped_questions == 1 and conv.dropped_evidence == 1
    assert conv.meta[0]["timestamp"] < conv.meta[4]["timestamp"], "session dates become timestamps"


def test_locomo_harness_outputs_every_system(tmp_path: Path) -> None:
    res = run_locomo(_locomo_file(tmp_path), embedder=HashEmbedder(), store="memory")
    assert set(res["systems"]) == set(SYSTEMS)
    for name, m in res["systems"].items():
        for key in ("R@5", "R@10", "R@25", "R@10_cat1", "R@10_cat2", "R@10_cat4", "R@10_cat5"):
            assert _in_unit(m[key]), (name, key, m[key])
        assert m["R@5"] <= m["R@10"] <= m["R@25"]
        assert m["questions"] == 5.0
    # 7 turns and k >= 7: every evidence id is found by any system that ranks all turns
    assert res["systems"]["dense_only"]["R@10"] == 1.0
    tok = res["tokens"]
    assert tok["systems"]["chatrecall_retrieve"]["tokens_per_turn"] > 0
    assert _in_unit(tok["systems"]["last6+top10"]["recall"])
    out = write_outputs(res, tmp_path / "out" / "locomo.json")
    saved = json.loads(out.read_text())
    assert {"systems", "machine", "targets"} <= set(saved)
    assert {"cpu", "cores", "ram_gb", "python", "torch", "chromadb"} <= set(saved["machine"])
    md = out.with_suffix(".md").read_text()
    assert "| chatrecall |" in md and "R@10_cat1" in md


@pytest.mark.skipif(not (DATA / "locomo" / "locomo_dev.json").exists(), reason="shared LoCoMo data not present")
def test_locomo_shared_file_loads_with_known_defects() -> None:
    convs = load_locomo(DATA / "locomo" / "locomo_dev.json")
    assert len(convs) == 6
    assert sum(c.skipped_questions for c in convs) == 2
    assert sum(len(c.questions) for c in convs) == 1155
    assert all(q.evidence for c in convs for q in c.questions)


# ---------------------------------------------------------------- LongMemEval
def test_longmemeval_metrics_follow_the_official_protocol() -> None:
    gold_t, gold_s = {"b#0", "c#2"}, {"b", "c"}
    m = score_ranking(["a#0", "b#0", "b#2", "c#2", "d#0"], gold_t, gold_s)
    assert m["turn_recall_all@5"] == 1.0 and m["turn_recall_any@5"] == 1.0
    assert m["session_recall_all@5"] == 1.0
    # sessions by best turn: a, b, c, d -> gold at ranks 2 and 3; DCG with rank 2 undiscounted
    want = (1 + 1 / math.log2(3)) / (1 + 1 / math.log2(2))
    assert m["session_ndcg_any@10"] == pytest.approx(want)
    assert ndcg_official([1, 0, 0], 1, 10) == 1.0
    assert ndcg_official([0, 1], 1, 10) == 1.0, "LongMemEval's DCG does not discount rank 2"
    miss = score_ranking(["a#0", "b#0"], gold_t, gold_s)
    assert miss["turn_recall_all@5"] == 0.0 and miss["turn_recall_any@5"] == 1.0


def test_longmemeval_harness_skips_unscorable_and_outputs(tmp_path: Path) -> None:
    path = _lme_file(tmp_path)
    qs, skipped = load_longmemeval(path)
    assert [q.qid for q in qs] == ["q1"]
    assert skipped == {"abstention": 1, "assistant_only_evidence": 1}
    assert qs[0].gold_turns == {"answer_s_b#0"} and qs[0].gold_sessions == {"answer_s_b"}
    assert len(qs[0].keys) == 6, "keys are the user turns only"
    assert parse_lme_date("2023/05/20 (Sat) 02:21") == 1684549260.0
    res = run_longmemeval(path, embedder=HashEmbedder(), store="memory", systems="chatrecall,dense_only,bm25_only")
    assert set(res["systems"]) == {"chatrecall", "dense_only", "bm25_only"}
    for m in res["systems"].values():
        for key in ("session_recall_all@5", "session_recall_all@10", "session_ndcg_any@10", "turn_recall_all@5",
                    "turn_recall_all@10", "turn_ndcg_any@10", "turn_recall_all@10_single-session-user"):
            assert _in_unit(m[key]), key
        assert m["session_recall_all@5"] == 1.0, "3 sessions: any ranking holds the gold one in the top 5"
    assert "LongMemEval" in render_markdown(res)


@pytest.mark.skipif(not (DATA / "longmemeval" / "longmemeval_s_dev60.json.gz").exists(),
                    reason="shared LongMemEval data not present")
def test_longmemeval_shared_file_loads() -> None:
    qs, skipped = load_longmemeval(DATA / "longmemeval" / "longmemeval_s_dev60.json.gz", limit=6)
    assert qs and all(q.gold_turns and q.gold_sessions for q in qs)
    assert all(k.rsplit("#", 1)[0] in {m["session_id"] for m in q.meta} for q in qs for k in q.gold_turns)



@pytest.mark.skipif(not (DATA / "longmemeval" / "longmemeval_s_dev60.json.gz").exists(),
                    reason="shared LongMemEval data not present")
def test_longmemeval_with_the_assistant_turns_keeps_the_users_gold() -> None:
    path = DATA / "longmemeval" / "longmemeval_s_dev60.json.gz"
    users, _ = load_longmemeval(path, limit=6)
    both, _ = load_longmemeval(path, limit=6, assistant_turns=True)
    assert [q.gold_turns for q in both] == [q.gold_turns for q in users]
    assert all({m["role"] for m in q.meta} == {"user", "assistant"} for q in both)
    assert all(set(u.keys) < set(b.keys) for u, b in zip(users, both))


# ---------------------------------------------------------------- speed
def test_speed_harness_on_fakes(tmp_path: Path) -> None:
    texts = [f"turn {i}: we talked about topic {i % 17} and the city of Lyon" for i in range(120)]
    questions = [f"what did we say about topic {i}?" for i in range(12)]
    res = run_speed(sizes=(60, 150), queries=3, store="memory", embedder=HashEmbedder(), texts=texts,
                    questions=questions, ingest_turns=30, gate_messages=30, rounds=2)
    assert set(res["systems"]) >= {"vector_only", "vector_1hop", "vector_bfs3", "entity_first", "hybrid",
                                   "retrieve", "langchain_chroma", "embed_query_only"}
    for m in res["systems"].values():
        assert {"p50_ms@60", "p95_ms@60", "p50_ms@150", "p95_ms@150", "p50_ms_median_of_rounds@150"} <= set(m)
        assert all(v > 0 for v in m.values())
    assert res["gate"]["gate_us_p50"] > 0 and res["gate"]["gate_us_p95"] >= res["gate"]["gate_us_p50"]
    assert res["ingest"]["chatrecall_add_many_turns_per_s"] > 0
    assert res["memory"]["peak_rss_mb@150"] > 0
    out = write_outputs(res, tmp_path / "speed.json")
    assert "Latency per query" in out.with_suffix(".md").read_text()


def test_perturbed_copies_stay_close_and_distinct() -> None:
    import numpy as np

    v = HashEmbedder(dim=384).embed_documents(["alpha beta", "gamma delta", "epsilon"])
    assert perturb(v, 0) is v
    p = perturb(v, 3)
    cos = (p * v).sum(1)
    assert np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    assert (cos > 0.8).all() and (cos < 0.98).all()


# ---------------------------------------------------------------- CLI and real parts
def test_cli_bench_locomo_with_fakes(tmp_path: Path) -> None:
    from chatrecall.cli import main

    out = tmp_path / "r" / "locomo.json"
    rc = main(["bench", "locomo", str(_locomo_file(tmp_path)), "--out", str(out), "--embedder", "hash",
               "--store", "memory", "--systems", "chatrecall,bm25_only", "--no-tokens"])
    assert rc == 0
    saved = json.loads(out.read_text())
    assert set(saved["systems"]) == {"chatrecall", "bm25_only"}
    assert out.with_suffix(".md").exists()


def test_locomo_on_real_parts(tmp_path: Path, st_embedder: Any) -> None:
    pytest.importorskip("chromadb")
    pytest.importorskip("langchain_chroma")
    res = run_locomo(_locomo_file(tmp_path), embedder=st_embedder, store="chroma",
                     systems="chatrecall,dense_only,langchain_chroma", tokens=False)
    assert "ChromaStore" in res["store"]
    assert res["systems"]["dense_only"]["R@5"] == pytest.approx(res["systems"]["langchain_chroma"]["R@5"])
    assert res["systems"]["chatrecall"]["R@5"] >= 0.5


# ---------------------------------------------------------------- speed: new modes (p99, ratios, threads, cold start, server)
_SPEED_TEXTS = [f"turn {i}: we talked about topic {i % 17} and the city of Lyon with Alice" for i in range(160)]
_SPEED_QUESTIONS = [f"what did we say about topic {i}?" for i in range(12)]


def test_speed_p99_ratios_and_threads_on_fakes() -> None:
    res = run_speed(sizes=(60,), queries=3, store="memory", embedder=HashEmbedder(), texts=_SPEED_TEXTS,
                    questions=_SPEED_QUESTIONS, ingest_turns=20, gate_messages=20, rounds=1, threads=3,
                    throughput_calls=9)
    for m in res["systems"].values():
        assert m["p50_ms@60"] <= m["p95_ms@60"] <= m["p99_ms@60"]
    r = res["ratios_to_langchain_chroma_p50"]["60"]
    assert r["hybrid_vs_langchain_search_only"] > 0 and r["hybrid_vs_langchain_end_to_end"] > 0
    assert res["hybrid_vs_langchain_chroma_search_only_p50"] == r["hybrid_vs_langchain_search_only"]
    t = res["threads"]["60"]
    assert t["retrieves_per_s_1_thread"] > 0 and t["retrieves_per_s_3_threads"] > 0 and t["speedup"] > 0
    assert "cold_start" not in res and "server" not in res  # both need the chroma store
    titles = [s["title"] for s in res["tables"]]
    assert any("search only" in t for t in titles) and any("threads" in t for t in titles)


def test_speed_cold_start_with_and_without_snapshot_reuses_cached_stores(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    kw: dict[str, Any] = dict(queries=3, store="chroma", embedder=HashEmbedder(), texts=_SPEED_TEXTS,
                              questions=_SPEED_QUESTIONS, ingest_turns=20, gate_messages=20, rounds=1, threads=0,
                              server=False, cold_runs=1, cache_dir=tmp_path / "cache")
    res = run_speed(sizes=(50, 120), cold_start=[120], **kw)
    assert set(res["cold_start"]) == {"120"}
    c = res["cold_start"]["120"]
    assert c["snapshot"]["from_snapshot"] == 1 and c["no_snapshot"]["from_snapshot"] == 0
    assert c["snapshot"]["records"] == c["no_snapshot"]["records"] == 120
    for v in ("snapshot", "no_snapshot"):
        assert 0 < c[v]["first_retrieve_s"] < c[v]["process_s"]
    assert c["speedup"] > 0
    assert res["systems"]["retrieve"]["p99_ms@120"] > 0
    # a second run reuses the stores of both sizes: nothing is stored again
    again = run_speed(sizes=(50, 120), cold_start=False, **kw)
    assert "cold_start" not in again
    assert any("reused from the cache for sizes 50, 120" in n for n in again["notes"])
    assert again["store_fill_seconds"]["120"] < res["store_fill_seconds"]["120"] + 5


@pytest.mark.server
def test_speed_server_mode_against_embedded(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    from chatrecall._bench._speed import chroma_executable

    if chroma_executable() is None:
        pytest.skip("the `chroma` executable (chromadb CLI) is not installed")
    res = run_speed(sizes=(40,), queries=3, store="chroma", embedder=HashEmbedder(), texts=_SPEED_TEXTS,
                    questions=_SPEED_QUESTIONS, ingest_turns=20, gate_messages=20, rounds=1, threads=0,
                    server=40, cold_start=False)
    s = res["server"]
    assert s["size"] == 40 and s["retrieve_server_p50_ms"] > 0 and s["retrieve_embedded_p50_ms"] > 0
    assert s["retrieve_server_vs_embedded_p50"] == pytest.approx(
        s["retrieve_server_p50_ms"] / s["retrieve_embedded_p50_ms"])
    assert any(t["metric"].startswith("server retrieve p50") for t in res["targets"])


def test_cli_speed_flags_reach_the_harness() -> None:
    from chatrecall._bench import _speed_extra
    from chatrecall.cli import build_parser

    args = build_parser().parse_args(["bench", "speed", "--out", "x.json", "--server", "off", "--threads", "4",
                                      "--cold-start", "10000,100000", "--embedder-backends", "torch,onnx"])
    assert _speed_extra(args) == {"server": "off", "threads": 4, "cold_start": "10000,100000",
                                  "embedder_backends": "torch,onnx"}
    plain = build_parser().parse_args(["bench", "speed", "--out", "x.json"])
    assert _speed_extra(plain) == {}  # the defaults live in run_speed
