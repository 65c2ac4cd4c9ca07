"""A memory turn whose small lookup finds no memory at all still tries the documents.

Two-phase: the small memory lookup first, the corpus when memory was not enough. A new user's first session holds
every turn in the recent window, which the memory search leaves out, so the lookup found nothing, and the
documents were never searched: "does the lease allow a dog?" and "Pasha chewed the carpet, who pays for that?"
(a tenant who had uploaded the lease) came back with the recent turns alone, the pet clause unread. A lookup that
finds nothing is memory not being enough, as a lookup that finds nothing useful already was.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

import chatrecall
from chatrecall import ChatRecall
from chatrecall.testing import ManualClock

LEASE = [
    {"id": "pets", "title": "Tenancy agreement: pets",
     "text": "One dog or one cat is allowed with a pet deposit of 200 pounds. The tenant pays for any damage a "
             "pet does to carpets, doors or furniture."},
    {"id": "repairs", "title": "Tenancy agreement: repairs",
     "text": "Report repairs to the landlord in writing. Heating is fixed within 24 hours and leaks within 7 days."},
    {"id": "bins", "title": "Tenancy agreement: bins",
     "text": "General waste is collected on Mondays and recycling every other Thursday."},
]
FIRST_SESSION = [
    ("user", "We adopted a rescue dog last week, his name is Pasha."),
    ("assistant", "Lovely name! How is he settling in?"),
    ("user", "I'm taking Pasha to the vet on Thursday for his jabs."),
    ("assistant", "Good luck at the vet!"),
]


def _chat(cr: ChatRecall, clock: ManualClock) -> None:
    cr.add_documents(LEASE)
    for role, text in FIRST_SESSION:
        cr.add(text, user_id="u", session_id="s1", role=role)
        clock.advance(60)


def _docs(res: Any) -> list[str]:
    return [i.record.session_id for i in res.items if i.source == "corpus"]


# ----------------------------------------------------------------- mechanism (fakes)
def test_an_empty_lookup_tries_the_documents(make_engine: Any, clock: ManualClock) -> None:
    eng = make_engine()
    _chat(eng, clock)
    res = eng.retrieve("pet deposit dog carpets damage", user_id="u", session_id="s1", route="memory")
    assert not [i for i in res.items if i.source == "memory"]  # every memory is in the recent window
    assert _docs(res), res.explain()
    assert any("no memory" in n for n in res.notes), res.notes


# ----------------------------------------------------------------- behaviour (real model, embedded Chroma)
@pytest.fixture
def tenant(tmp_path: Any) -> Any:
    clock = ManualClock(datetime(2026, 3, 2, 9, tzinfo=timezone.utc))
    cr = chatrecall.connect(path=tmp_path / "home", clock=clock)
    _chat(cr, clock)
    yield cr
    cr.close()


@pytest.mark.model
@pytest.mark.parametrize("message", ["does the lease allow a dog?", "Pasha chewed the carpet, who pays for that?"])
def test_a_first_session_question_reads_the_lease(tenant: ChatRecall, message: str) -> None:
    res = tenant.retrieve(message, user_id="u", session_id="s1")
    assert res.gate.route.wants_memory  # the gate asks memory: the lease and Pasha are the user's own
    assert _docs(res)[:1] == ["pets"], res.explain()
    assert len(res.recent) == len(FIRST_SESSION)  # the conversation is still there


@pytest.mark.model
def test_casual_turns_still_search_nothing(tenant: ChatRecall) -> None:
    res = tenant.retrieve("haha thanks!", user_id="u", session_id="s1")
    assert res.route.value == "none" and not res.items
