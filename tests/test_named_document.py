"""A memory turn keeps a passage whose document the message names.

nu51 (stop 46, turn 15): "what's in my price list for the full-day package?" went to memory, whose quotes looked
useful; the documents were searched and the "2026 Price List" passage was dropped as not strong ("no passage kept:
memory only"), though the message names that document. Stop 46's T2 keeps such a passage: two words next to each
other in its title ("price list") are next to each other in the message (docs/benchmarks.md, "T2").
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from chatrecall import ChatRecall
from chatrecall.core._engine import ChatRecall as _Engine
from chatrecall.core._types import Record, ScoredItem
from chatrecall.testing import ManualClock


def _titled(title: str | None) -> ScoredItem:
    """A passage of a document with ``title`` (None: untitled)."""
    rec = Record(id="d#0", text="...", user_id="", session_id="d", role="document", timestamp=0.0,
                 metadata={} if title is None else {"title": title})
    return ScoredItem(id="d#0", text="...", source="corpus", score=0.2, components={}, tokens=1, tier="low",
                      why="", record=rec)


@pytest.mark.parametrize(("message", "title", "named"), [
    ("what's in my price list for the full-day package?", "Maya Reid Photography - 2026 Price List", True),
    ("what does my tenancy agreement say about pets?", "Tenancy Agreement - 14 Elm Road", True),
    ("how much did I quote the Patels?", "Maya Reid Photography - 2026 Price List", False),
    ("what's the price of the full day?", "Maya Reid Photography - 2026 Price List", False),  # one word only
    ("list the prices", "Maya Reid Photography - 2026 Price List", False),  # not next to each other in that order
])
def test_a_message_names_a_document_by_two_adjacent_title_words(message: str, title: str, named: bool) -> None:
    assert _Engine._names_title(message, _titled(title)) is named


def test_an_untitled_passage_is_named_by_nothing() -> None:
    assert not _Engine._names_title("what's in my price list?", _titled(None))


pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")

PRICES = ("Essentials: 6 hours of coverage, one photographer, 400+ edited images and an online gallery - £1,800. "
          "Full Day: 10 hours of coverage from bridal prep to first dance, 600+ edited images, online gallery - "
          "£2,400. Two-Day Package: the Full Day plus a second day of up to 5 hours for a welcome dinner, mehndi "
          "or day-after shoot - £3,900. Add-ons: engagement shoot (1 hour, 50 images) £350; second shooter £450; "
          "fine-art album (30 pages) £650. Travel over 30 miles from Bristol is charged at 45p per mile. "
          "All prices exclude VAT at 20%.")
RULES = ("Drones are not permitted anywhere on the estate without written permission from the National Trust "
         "filming office, applied for at least 28 days in advance. Confetti: only natural biodegradable petal "
         "confetti, thrown outside on the chapel lawn. Supplier parking is in the overflow car park.")
CONTRACT = ("1. Booking and deposit: a non-refundable booking fee of 25% of the package price secures the date; the "
            "balance is due 6 weeks before the wedding. 2. Cancellation: if the client cancels more than 6 months "
            "before the date, the booking fee is retained.")


def test_the_named_price_list_joins_the_useful_quotes(embedded_store: Any, st_embedder: Any) -> None:
    clock = ManualClock(datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc).timestamp())
    cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)

    def turn(session: str, said: str, reply: str) -> Any:
        res = cr.retrieve(said, user_id="maya", session_id=session)
        cr.add(said, user_id="maya", session_id=session)
        clock.advance(30)
        cr.add(reply, user_id="maya", session_id=session, role="assistant")
        clock.advance(60)
        return res

    try:
        turn("s1", "New booking: the Harrisons, Saturday 13 June, at Tyntesfield. I quoted them £2,400 for the full "
             "day.", "Congrats! Noted: Harrisons, Saturday 13 June, Tyntesfield, £2,400 full day.")
        turn("s1", "And the Patels, Priya and Dev, want the two-day package, I quoted £3,900. Their wedding is 22 "
             "August at Ashton Court.", "Great, Patels: two-day package at £3,900, 22 August at Ashton Court.")
        clock.advance(7 * 86400)
        cr.add_documents([{"id": "pricelist-2026", "title": "Maya Reid Photography - 2026 Price List", "text": PRICES},
                          {"id": "tyntesfield-rules", "title": "Tyntesfield - Photography Guidelines", "text": RULES},
                          {"id": "contract", "title": "Wedding Photography Agreement (template)", "text": CONTRACT}])
        turn("s2", "how much did I quote the Patels?", "You quoted the Patels £3,900 for the two-day package.")
        res = cr.retrieve("what's in my price list for the full-day package?", user_id="maya", session_id="s2")
        assert res.memories, res.explain()  # the quotes stay
        titles = [p.title for p in res.passages]
        assert "Maya Reid Photography - 2026 Price List" in titles, res.explain()
    finally:
        cr.close()
