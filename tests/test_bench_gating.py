"""Smoke tests of the gating benchmark on a slice of the real data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import islice
from pathlib import Path

import numpy as np
import pytest

from chatrecall._bench import _gating
from chatrecall._bench._gating import (
    CASUAL_MESSAGES,
    EXPLICIT_SIGNAL_MESSAGES,
    phrase_list_needs_memory,
    render_markdown,
    run_explicit_subset,
    run_gating,
)
from chatrecall.core._errors import InvalidInputError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gating"
CAST = DATA / "cast_needs_history_labels.jsonl"
IKAT = DATA / "ikat2023_memory_labels.jsonl"
N = 30

try:
    from chatrecall.core._fakes import HashEmbedder
except ImportError:  # pragma: no cover - the lead's fake not there yet
    class HashEmbedder:  # type: ignore[no-redef]
        """Bag-of-words hashing embedder, enough for a smoke test."""

        dim = 64

        def _one(self, text: str) -> np.ndarray:
            v = np.zeros(self.dim, dtype=np.float32)
            for w in text.lower().split():
                v[hash(w) % self.dim] += 1.0
            n = float(np.linalg.norm(v))
            return v / n if n else v

        def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

        def embed_query(self, text: str) -> np.ndarray:
            return self._one(text)


def _head(src: Path, dst: Path, n: int = N) -> Path:
    if not src.exists():
        pytest.skip(f"shared gating data not found at {src}")
    with src.open(encoding="utf-8") as fh:
        dst.write_text("".join(islice(fh, n)), encoding="utf-8")
    return dst


@pytest.fixture()
def cast_small(tmp_path: Path) -> Path:
    return _head(CAST, tmp_path / "cast_needs_history_labels.jsonl")


@pytest.fixture()
def ikat_small(tmp_path: Path) -> Path:
    return _head(IKAT, tmp_path / "ikat2023_memory_labels.jsonl")


def _check_systems(result: dict, names: set[str], n: int) -> None:
    assert set(result["systems"]) == names
    for name, s in result["systems"].items():
        assert set(s) == {"precision", "recall", "f1", "skip_rate", "gate_us_p50", "gate_us_p95", "n"}, name
        for k in ("precision", "recall", "f1", "skip_rate"):
            assert 0.0 <= s[k] <= 1.0, (name, k)
        assert 0.0 <= s["gate_us_p50"] <= s["gate_us_p95"]
        assert s["n"] == n
    always = result["systems"]["always_search"]
    assert always["recall"] == 1.0
    assert always["skip_rate"] == 0.0
    assert always["precision"] == pytest.approx(result["positives"] / n)


def test_run_gating_on_cast_slice(cast_small: Path) -> None:
    res = run_gating(cast_small, text_field="raw_utterance", label_field="needs_history",
                     embedder=HashEmbedder(), progress=False)
    assert res["dataset"] == "cast_needs_history_labels"
    assert res["n"] == N
    rows = [json.loads(line) for line in cast_small.read_text().splitlines()]
    assert res["positives"] == sum(r["needs_history"] for r in rows)
    _check_systems(res, {"chatrecall", "always_search", "phrase_list", "embedding_similarity"}, N)
    # The gate must beat the phrase list on recall: CAsT is pronoun/ellipsis dependency.
    assert res["systems"]["chatrecall"]["recall"] > res["systems"]["phrase_list"]["recall"]
    sub = res["explicit_signal_subset"]
    assert sub["n_explicit"] == len(EXPLICIT_SIGNAL_MESSAGES)
    assert sub["n_casual"] == len(CASUAL_MESSAGES)


def test_run_gating_on_ikat_slice_with_or_labels(ikat_small: Path) -> None:
    res = run_gating(ikat_small, text_field="utterance",
                     label_field=("needs_ptkb_memory", "needs_dialog_history"), progress=False)
    rows = [json.loads(line) for line in ikat_small.read_text().splitlines()]
    assert res["label"] == "needs_ptkb_memory|needs_dialog_history"
    assert res["positives"] == sum(r["needs_ptkb_memory"] or r["needs_dialog_history"] for r in rows)
    _check_systems(res, {"chatrecall", "always_search", "phrase_list"}, N)  # no embedder: skipped


def test_run_gating_with_progress_bars(cast_small: Path) -> None:
    res = run_gating(cast_small, text_field="raw_utterance", label_field="needs_history", progress=True)
    assert res["systems"]["always_search"]["recall"] == 1.0


def test_embedding_similarity_first_turn_of_a_topic_never_searches(tmp_path: Path) -> None:
    path = tmp_path / "toy.jsonl"
    lines = [
        {"topic": 1, "text": "tell me about cheese aging", "y": False},
        {"topic": 1, "text": "tell me about cheese aging caves", "y": True},
        {"topic": 2, "text": "tell me about cheese aging caves", "y": False},  # new topic: no history
    ]
    path.write_text("\n".join(json.dumps(r) for r in lines))
    res = run_gating(path, text_field="text", label_field="y", embedder=HashEmbedder(), progress=False,
                     similarity_threshold=0.5)
    emb = res["systems"]["embedding_similarity"]
    assert emb["skip_rate"] == pytest.approx(2 / 3)
    assert emb["recall"] == 1.0 and emb["precision"] == 1.0


def test_explicit_signal_subset_meets_targets() -> None:
    sub = run_explicit_subset()
    assert len(EXPLICIT_SIGNAL_MESSAGES) >= 60 and len(CASUAL_MESSAGES) >= 60
    assert sub["chatrecall"]["recall"] >= 0.95
    assert sub["chatrecall"]["precision"] >= 0.90
    assert sub["chatrecall"]["casual_skip_rate"] >= 0.95
    assert sub["phrase_list"]["recall"] < sub["chatrecall"]["recall"]


def test_phrase_list_baseline() -> None:
    assert phrase_list_needs_memory("Do you REMEMBER the plan?")
    assert phrase_list_needs_memory("tell me about lung cancer")
    assert not phrase_list_needs_memory("Is it treatable?")


def test_render_markdown(cast_small: Path) -> None:
    res = run_gating(cast_small, text_field="raw_utterance", label_field="needs_history", progress=False)
    md = render_markdown([res, res])
    assert md.count("| chatrecall |") == 3  # two data sets + the explicit subset
    assert "always_search" in md and "phrase_list" in md and "explicit-signal subset" in md
    assert render_markdown(res).count("### cast_needs_history_labels") == 1


def test_bad_arguments(cast_small: Path) -> None:
    with pytest.raises(InvalidInputError, match="last_n"):
        run_gating(cast_small, text_field="raw_utterance", label_field="needs_history", last_n=0, progress=False)
    with pytest.raises(InvalidInputError, match="nope"):
        run_gating(cast_small, text_field="nope", label_field="needs_history", progress=False)


def test_main_runs_every_standard_data_set(cast_small: Path, ikat_small: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out_json = cast_small.parent / "out.json"
    assert _gating.main(["--data-dir", str(cast_small.parent), "--no-progress", "--embedder", "hash",
                         "--json", str(out_json)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("| embedding_similarity |") == 4
    assert len(json.loads(out_json.read_text())) == 4
