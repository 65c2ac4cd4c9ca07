"""A question naming a document's subject gets that document, whatever the memories are about.

nu48 (stop 44, a renovation chatbot on LangChain's ``create_agent``): the user's memories were all about the
electrician's quote (the quote, the bot's echo of it, "what did the electrician quote?" and its answer). "What does the
bathroom quote come to in total?" searched both; its corpus query was informed by those memories, found the rewire
quote first, and the bathroom quote, which the message names, was left out as "memory useful, passage not strong".
Since stop 45 a message naming a word that nothing informing the query says, and that the passage found first lacks
while another passage holds it, queries the corpus by itself. Elliptical follow-ups still use the conversation.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

import chatrecall  # noqa: E402
from chatrecall.testing import ManualClock  # noqa: E402

DOCS = [
    {"id": "rewire", "title": "Sparkwise Electrical - rewire quote",
     "text": "Quote for a full rewire of a two-bedroom flat. Consumer unit replacement, new circuits for kitchen and "
             "bedrooms, certification. Total: £3,400 including VAT. Valid for 30 days."},
    {"id": "bathroom", "title": "AquaFlow Plumbing - bathroom refit quote",
     "text": "Bathroom refit quote. Strip out existing suite and tiles: £450. Supply and fit new suite: £1,350. "
             "Tiling: £1,000. Total: £2,800 excluding VAT. Work takes eight working days."},
    {"id": "contract", "title": "Building contract - Harehills Lane",
     "text": "The contractor will complete the works within twelve weeks. Payments are made in three stages. "
             "Variations must be agreed in writing before the work is done."},
]
HISTORY = [
    ("user", "The electrician is Sparkwise, they quoted £3,400 for the full rewire."),
    ("assistant", "Noted: Sparkwise, £3,400 for the rewire."),
    ("user", "Our total budget for the whole renovation is £28,000."),
    ("user", "what did the electrician quote?"),
    ("assistant", "Sparkwise quoted £3,400 for the rewire."),
]


@pytest.fixture
def cr() -> Iterator[chatrecall.ChatRecall]:
    with tempfile.TemporaryDirectory() as d:
        clock = ManualClock(1_780_000_000.0)
        engine = chatrecall.connect(path=d, clock=clock)
        try:
            engine.add_documents(DOCS)
            for role, text in HISTORY:
                engine.add(text, user_id="p", session_id="s1", role=role)
                clock.advance(60)
            clock.advance(3 * 86400)
            yield engine
        finally:
            engine.close()


@pytest.mark.parametrize("question", ["What does the bathroom quote come to in total?",
                                      "what did the bathroom quote come to?"])
def test_a_question_naming_the_other_document_gets_it(cr: chatrecall.ChatRecall, question: str) -> None:
    res = cr.retrieve(question, user_id="p", session_id="s2")
    texts = [i.text for i in res.items if i.source == "corpus"]
    assert texts and texts[0].startswith("Bathroom refit quote"), res.explain()
    assert res.passages[0].title == "AquaFlow Plumbing - bathroom refit quote"
    assert any("corpus query: the message alone" in n and "bathroom" in n for n in res.notes), res.notes


def test_an_elliptical_follow_up_keeps_the_conversation_in_its_query(cr: chatrecall.ChatRecall) -> None:
    res = cr.retrieve("And how long is that quote valid for?", user_id="p", session_id="s2", route="both")
    texts = [i.text for i in res.items if i.source == "corpus"]
    assert texts and texts[0].startswith("Quote for a full rewire"), res.explain()
    assert not any("the message alone" in n for n in res.notes), res.notes


@pytest.fixture
def said_bathroom(cr: chatrecall.ChatRecall) -> chatrecall.ChatRecall:
    """The conversation said "bathroom" once, long before, as nu48's had."""
    cr.add("Tiles picked out for the bathroom: the grey slate ones.", user_id="p", session_id="s0", role="user",
           timestamp=1_770_000_000.0)
    return cr


def test_a_memory_turn_keeps_the_document_its_message_names(said_bathroom: chatrecall.ChatRecall) -> None:
    cr = said_bathroom
    # nu48's own turn was a memory turn: its memories passed the usefulness check, and the documents were searched
    # as the probe, which kept strong passages only; the bathroom quote, found first by the message alone, was
    # dropped as "memory useful, passage not strong"
    res = cr.retrieve("What does the bathroom quote come to in total?", user_id="p", session_id="s2",
                      route="memory")
    texts = [i.text for i in res.items if i.source == "corpus"]
    assert any(t.startswith("Bathroom refit quote") for t in texts), res.explain()
    assert not any(t.startswith("Quote for a full rewire") for t in texts), res.explain()
    # kept by the title rule, unless the passage is strong on its own (0.423 against the 0.4 bar on one machine's
    # query vectors, under it on another's): either way the document the message names reaches the prompt
    bathroom = next(i for i in res.items if i.text.startswith("Bathroom refit quote"))
    assert any("its title names 'bathroom'" in n for n in res.notes) \
        or bathroom.score >= cr.retrieval_config.strong_corpus_score, res.notes
