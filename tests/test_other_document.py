"""A correction asking for "the other one" leaves out the documents the corrected turn got.

nu45 (stop 43, a coffee cart's LangChain chatbot): "And what time do I need to be set up at the market?" got the Leith
Saturday market's rules; "no, I meant the other market, the Sunday one" got them first again, above the Stockbridge
Sunday market's. The corrected question names no market, so there was nothing to rule out by name
(``other_than``); what the user rules out is the document the answer came from. Since stop 44 a correction asking for
"the other ..." whose corrected question names nothing leaves out the passages of the documents that turn got, unless
they hold every word the correction asks for ("Sunday").
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

import chatrecall  # noqa: E402

DOCS = [
    {"id": "leith-rules", "title": "Leith Saturday Market - trader rules",
     "text": "Traders may arrive from 07:00 and every stall must be set up by 08:30. The market is open to the public "
             "from 09:00 to 15:00. Generators are not allowed; each pitch has a 13A socket. Pitch fee: 55 per day."},
    {"id": "stockbridge-rules", "title": "Stockbridge Sunday Market - trader rules",
     "text": "Stalls must be set up by 09:15; the market opens at 10:00 and closes at 16:00 every Sunday in Saunders "
             "Street. Quiet generators are allowed. Pitches cost 45 per day, paid monthly in advance."},
    {"id": "price-list", "title": "Brew & Roll price list",
     "text": "Espresso 2.50, flat white 3.40, oat milk +0.40. Events: 180 for the first 100 cups, travel 0.60 per km."},
]


@pytest.fixture
def cr() -> Iterator[chatrecall.ChatRecall]:
    with tempfile.TemporaryDirectory() as d:
        engine = chatrecall.connect(path=d)
        try:
            engine.add_documents(DOCS)
            yield engine
        finally:
            engine.close()


def _turn(cr: chatrecall.ChatRecall, message: str, reply: str, session: str) -> chatrecall.RetrievalResult:
    res = cr.retrieve(message, user_id="tom", session_id=session)
    cr.add(message, user_id="tom", session_id=session)
    cr.add(reply, user_id="tom", session_id=session, role="assistant")
    return res


def _docs(res: chatrecall.RetrievalResult) -> list[str]:
    return [i.record.session_id for i in res.passages if i.record is not None]


def test_the_other_market_gets_the_other_rules(cr: chatrecall.ChatRecall) -> None:
    _turn(cr, "We've got a pitch at the Leith Saturday Market every week, and we start at Stockbridge on Sundays soon.",
          "Two markets would be a solid base.", "s1")
    first = _turn(cr, "And what time do I need to be set up at the market?", "Set-up is by 08:30.", "s2")
    assert _docs(first)[:1] == ["leith-rules"], first.explain()  # the turn the user corrects
    res = _turn(cr, "no, I meant the other market, the Sunday one", "Sorry: by 09:15 at Stockbridge.", "s2")
    got = _docs(res)
    assert got and got[0] == "stockbridge-rules", res.explain()
    assert "leith-rules" not in got, res.explain()
    assert any("the corrected turn got" in r.why for r in res.rejected), res.explain()


def test_a_follow_up_on_the_same_document_keeps_it(cr: chatrecall.ChatRecall) -> None:
    first = _turn(cr, "What time do I need to be set up at the Leith market?", "By 08:30.", "s1")
    assert _docs(first)[:1] == ["leith-rules"], first.explain()
    res = _turn(cr, "and what's the pitch fee there?", "55 per day.", "s1")
    assert "leith-rules" in _docs(res), res.explain()
