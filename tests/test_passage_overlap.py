"""Neighbouring chunks of one document are injected without their shared text twice.

``add_documents`` cuts a document into chunks that carry the tail of the chunk before (``overlap_words``), so
an answer spanning a cut survives. When a turn injects two neighbouring chunks, that tail reached the prompt
twice (helper-117's new user: "the same clause twice, word for word"). The later of the two in the context now
leaves the shared words out (and says so in its ``why``); the tokens it no longer costs are not counted.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from chatrecall import ChatRecall
from chatrecall.core._budget import trim_overlaps
from chatrecall.core._types import Record, ScoredItem

SENT = re.compile(r"(?<=[.!?])\s+|\n")

#: A kitchen's allergen procedure: each sentence is unique, so any sentence seen twice in a context is a repeat.
HANDBOOK = (
    "Every dish on the menu has an allergen card kept in the red folder by the pass. "
    "The card lists the fourteen regulated allergens and marks each one the dish contains. "
    "A new dish needs a signed allergen card before it is served to any guest. "
    "The head chef signs the card after checking every sub-recipe and every supplier label. "
    "A sous-chef may sign the card only when the head chef is away for the whole service. "
    "When a supplier changes an ingredient, the card of every dish using it is checked again that day. "
    "Cross-contact is controlled by separate purple boards and knives for allergen-free orders. "
    "Fryer oil used for battered fish is never used for chips served as gluten free. "
    "A guest who declares an allergy is recorded on the ticket with the word ALLERGY in capitals. "
    "The server reads the allergen card to the guest and never guesses an ingredient. "
    "If the card is missing, the dish is not offered to a guest with an allergy. "
    "Allergen training is repeated every six months and signed off in the training log."
)


BULLET = re.compile(r"^- (\[[^\]]*\] )?", re.M)


def _sentences(text: str) -> list[str]:
    """The sentences of ``text`` (a chunk, or a context with its "- [title] " bullets), of four words or more."""
    return [s.strip(" …") for s in SENT.split(BULLET.sub("", text)) if len(s.split()) >= 4]


# ----------------------------------------------------------------- mechanism (no model)
def _item(seq: int, text: str, score: float, doc: str = "d") -> ScoredItem:
    rec = Record(id=f"{doc}{seq}", text=text, user_id="u", session_id=doc, role="document", timestamp=0.0, seq=seq)
    return ScoredItem(id=rec.id, text=text, source="corpus", score=score, components={}, tokens=len(text.split()),
                      record=rec)


A = "One two three. Four five six. Seven eight nine."
B = "Four five six. Seven eight nine. Ten eleven twelve."
C = "Seven eight nine. Ten eleven twelve. Thirteen fourteen."


def _count(text: str) -> int:
    return len(text.split())


def test_the_later_chunk_leaves_out_the_head_it_shares() -> None:
    kept, dropped = trim_overlaps([_item(0, A, 0.9), _item(1, B, 0.8)], _count)
    assert [i.text for i in kept] == [A, "… Ten eleven twelve."]
    assert kept[1].tokens == _count("… Ten eleven twelve.") and not dropped
    assert "repeat" in kept[1].why and "d0" in kept[1].why


def test_an_earlier_chunk_listed_second_leaves_out_its_tail() -> None:
    kept, _ = trim_overlaps([_item(1, B, 0.9), _item(0, A, 0.8)], _count)
    assert [i.text for i in kept] == [B, "One two three. …"]


def test_a_chunk_between_two_shown_neighbours_keeps_only_its_own_words() -> None:
    mid = "Four five six. Seven eight nine. Ten eleven twelve. Thirteen fourteen. Fifteen."
    left = "One two three. Four five six."
    right = "Thirteen fourteen. Fifteen. Sixteen."
    kept, dropped = trim_overlaps([_item(0, left, 0.9), _item(2, right, 0.8), _item(1, mid, 0.7)], _count)
    assert kept[2].text == "… Seven eight nine. Ten eleven twelve. …" and not dropped


def test_a_chunk_wholly_inside_what_is_shown_is_dropped_with_the_reason() -> None:
    kept, dropped = trim_overlaps([_item(0, "One two. Three four.", 0.9), _item(1, "Three four.", 0.5)], _count)
    assert [i.id for i in kept] == ["d0"]
    assert [i.id for i in dropped] == ["d1"] and "d0" in dropped[0].why


def test_no_trim_across_documents_gaps_memories_or_without_a_shared_run() -> None:
    items = [_item(0, A, 0.9), _item(1, B, 0.8, doc="other"), _item(2, C, 0.7),
             _item(3, "Nothing shared here.", 0.6)]
    mem = ScoredItem(id="m", text=B, source="memory", score=0.5, components={}, tokens=9, record=None)
    kept, dropped = trim_overlaps([*items, mem], _count)
    assert [i.text for i in kept] == [A, B, C, "Nothing shared here.", B] and not dropped


# ----------------------------------------------------------------- behaviour (real model, embedded Chroma)
@pytest.mark.model
def test_two_neighbouring_chunks_share_no_sentence_in_the_context(real_engine: ChatRecall) -> None:
    cr = real_engine
    cr.add_documents([{"id": "allergens", "title": "Allergen procedure", "text": HANDBOOK}],
                     max_words=70, overlap_words=30)
    res: Any = cr.retrieve("who signs the allergen card for a new dish, and can a sous-chef sign it?",
                           user_id="u", session_id="s", route="corpus")
    passages = [i for i in res.items if i.source == "corpus"]
    seqs = sorted(i.record.seq for i in passages)
    assert any(b - a == 1 for a, b in zip(seqs, seqs[1:])), res.explain()  # the case this is for
    said = _sentences(res.context)
    assert len(said) == len(set(said)), [s for s in said if said.count(s) > 1]
    # nothing a chunk holds is lost: every sentence of every injected chunk is in the context once
    whole = {s for i in passages for s in _sentences(i.record.text)}
    assert whole == set(said) & whole
    assert res.tokens_used == sum(i.tokens for i in (*res.items, *res.recent, *res.pins))
    assert sum(i.tokens for i in passages) < sum(cr.token_counter.count(i.record.text) for i in passages)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"max_words": 0}, r"max_words=0 is invalid: must be an int of at least 1"),
    ({"max_words": -5}, r"max_words=-5 is invalid"),
    ({"max_words": "160"}, r"max_words='160' is invalid"),
    ({"overlap_words": -1}, r"overlap_words=-1 is invalid"),
    ({"max_words": 20, "overlap_words": 20}, r"overlap_words=20 is invalid: must be less than max_words=20"),
])
def test_bad_chunk_sizes_fail_at_once_and_store_nothing(make_engine: Any, kwargs: dict[str, Any], match: str) -> None:
    """helper-118: max_words=-5 returned [] and stored nothing; 0 and '160' raised a bare ValueError / TypeError."""
    from chatrecall import InvalidInputError

    eng = make_engine()
    with pytest.raises(InvalidInputError, match=match):
        eng.add_documents([HANDBOOK], **kwargs)
    assert eng.add_documents([HANDBOOK], max_words=70, overlap_words=30)  # the engine is fine after it
