"""Documents another writer adds reach an engine that started with none.

nu49 (stop 45, an allotment society's assistant over ``chatrecall mcp``): documents added from Python while the
server ran were not searched by it. Two causes: the server's embedded Chroma client could not see another process's
records (tests/test_adapter_chroma.py), and an engine that had counted an empty corpus cached the 0 and skipped every
corpus search until it restarted; an app's other workers on one Chroma server were in the same place.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

import chatrecall  # noqa: E402
from chatrecall.core import _engine  # noqa: E402


def test_an_engine_that_counted_no_documents_finds_them_once_another_adds_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    serving = chatrecall.connect(path=tmp_path / "db")
    operator = chatrecall.connect(path=tmp_path / "db")
    try:
        res = serving.retrieve("Can I use a sprinkler on my plot?", user_id="u", session_id="s1")
        assert any("no corpus documents" in n for n in res.notes), res.notes
        operator.add_documents([{"title": "Water use policy", "text": "Hosepipes may not be connected to society "
                                 "taps. Sprinklers are forbidden on every plot."}])
        monkeypatch.setattr(_engine, "_EMPTY_CORPUS_RECOUNT_S", 0.0, raising=False)  # after 1 s: now
        res = serving.retrieve("Can I use a sprinkler on my plot?", user_id="u", session_id="s1")
        assert any("Sprinklers are forbidden" in i.text for i in res.passages), res.explain()
    finally:
        operator.close()
        serving.close()


def test_a_memory_another_writer_stored_is_found_and_no_note_says_there_is_none(tmp_path: Path) -> None:
    # nu49: the turn that found a memory written by another process still said "user_id 'u' has no stored memories
    # yet" (the note was written before the search brought the store's new turns in)
    serving = chatrecall.connect(path=tmp_path / "db")
    writer = chatrecall.connect(path=tmp_path / "db")
    try:
        res = serving.retrieve("Remember which plot I took on?", user_id="u", session_id="s1")
        assert any("has no stored memories yet" in n for n in res.notes), res.notes
        writer.add("I've just taken on plot 14B at Greenfield allotments.", user_id="u", session_id="s0")
        res = serving.retrieve("Remember which plot I took on?", user_id="u", session_id="s1")
        assert any("14B" in m.text for m in res.memories), res.explain()
        assert not any("has no stored memories yet" in n for n in res.notes), res.notes
    finally:
        writer.close()
        serving.close()
