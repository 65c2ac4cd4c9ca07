"""F1 (measured in stops 49 and 50, not shipped): a memory turn whose memories fall short could search the documents
informed by the recent turns. Both tests are strict xfails: known misses until a change like F1 ships (docs/benchmarks.md,
"F1 again").

helper-172's blind new-user chat (nu54, a micro-bakery owner): right after asking whether a flour order gets free
delivery (answered by the flour price list), "when does the supplier deliver?" went to memory (its "when"), the
memories were not useful, and the documents were searched with the message alone: the tax-deadline sheet (0.209)
came before the price list (0.203), which says when orders are delivered. A turn routed "both" already had its
document query informed by the recent user turns; a memory turn that fell short to the documents had not. F1 passed
both tests and met its criterion on a blind file written for it (stop 50), but failed test_bakery_chat: "What time do
we open on Sunday?" right after cake-order turns then found the cake order, not the opening hours.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import passages_hold, replay_fixture

from chatrecall import ChatRecall
from chatrecall.testing import HashEmbedder, InMemoryStore, ManualClock

USER = "priya"
T0 = 1772481000.0  # 2026-03-02 20:30 UTC

DOCS = [
    {"title": "Millstone Flour Co - trade price list",
     "text": "Organic strong white flour, 16 kg sack: £24.50. Wholemeal spelt flour, 16 kg sack: £31.00. Dark rye "
             "flour, 16 kg sack: £27.80. Orders over £150 get free delivery; smaller orders pay £9.50 delivery. "
             "Orders placed by Wednesday noon are delivered on Friday."},
    {"title": "Small business tax deadlines 2026",
     "text": "Quarterly VAT returns are due one month and seven days after the end of the VAT quarter. For the "
             "quarter ending 31 March 2026, the return and the payment are due by 7 May 2026. Self Assessment "
             "online returns for the 2025-26 tax year are due by 31 January 2027."},
]
SESSIONS = [
    (0, "s1", [
        ("I get my flour from Millstone Flour Co and my butter and cream from Hartley's Dairy.",
         "Two suppliers noted: Millstone for flour, Hartley's for dairy."),
        ("when's the VAT return due for the quarter ending in March?", "By 7 May 2026, return and payment both."),
    ]),
    (3, "s2", [
        ("I'm ordering two sacks of strong white flour for next week, will I get free delivery?",
         "Two sacks come to £49, under the £150 threshold, so delivery is £9.50."),
        ("haha nice, thanks", "Happy to help!"),
        ("when does the supplier deliver?", "Millstone delivers on Friday if you order by Wednesday noon."),
    ]),
]

chat = replay_fixture("fallback_informed", USER, T0, DOCS, SESSIONS)
F1 = pytest.mark.xfail(strict=True, reason="known miss: F1, which fixed it, was not shipped (stop 50: a topic switch "
                       "after document turns then got the recent topic's document, test_bakery_chat)")


@pytest.mark.model
@F1
def test_a_follow_up_whose_memories_fall_short_gets_the_document_the_chat_was_about(chat: dict[str, Any]) -> None:
    res = chat["when does the supplier deliver?"]
    assert passages_hold(res, "delivered on Friday"), res.explain()


@F1
def test_the_recent_turns_inform_the_document_query_of_a_memory_turn_that_fell_short() -> None:
    clock = ManualClock(T0)
    cr = ChatRecall(store=InMemoryStore(), embedder=HashEmbedder(), clock=clock)
    cr.add_documents(DOCS, user_id=USER)
    cr.add("My niece is visiting on Sunday.", user_id=USER, session_id="s1")
    clock.advance(86400)
    cr.add("I'm ordering two sacks of strong white flour, will I get free delivery?", user_id=USER, session_id="s2")
    res = cr.retrieve("when does the supplier deliver?", user_id=USER, session_id="s2", route="memory")
    assert "memory not clearly useful" in " ".join(res.notes), res.explain()
    # the recent user turn informs the query; the memories that fell short do not
    assert "corpus query: the message plus 1 recent turn" in res.notes, res.explain()
    cr.close()
