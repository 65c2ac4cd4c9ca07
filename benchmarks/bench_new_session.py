#!/usr/bin/env python
"""One message in a new session after an earlier one: what reaches the context? (stop 45: Q1, S1, D3, U1, ST2)

Five held-out sets, each written by a helper who saw no code, before the change it judges was run on it:

* ``benchmarks/data/doc_drift/doc_drift.json`` (Q1, 36 scenarios): 2-4 look-alike titled documents (two leases, two
  course syllabuses, two policies...), an earlier session about one of them (A), and a question in a new session.
  Kinds: ``named_other`` (18: the question names the other document's subject, B, which the conversation barely
  mentioned: "How often should I change the cartridge in the humidifier?" after a session about the
  dehumidifier), ``elliptical`` (10: the question does not name its subject, "what time does it start on
  Saturdays?", and only the conversation says it is A) and ``named_same`` (8: it names A). Reported: the gold
  document first among the passages, among them, the distractor among them.
* ``benchmarks/data/statements/statements.json`` (S1, 48 scenarios): an earlier session, then a message in a new
  session. Kinds: ``statement`` (24: news that needs nothing recalled, "My mum got home from hospital
  yesterday..."), ``implicit_request`` (14: a statement or request in form that needs one stored fact, "Remind
  me when the walls are getting skimmed") and ``question`` (10: "Which tool handles the scheduling for our
  analytics jobs?"). Reported: messages given any memory, memories given, the gold turn given.
* ``benchmarks/data/memory_corrections/memory_corrections.json`` (D3, 20 scenarios): two similar facts of the user in
  different sessions (two plots, two cars, two kids' schools...), a question answered from the wrong one, then "no,
  I meant the other plot" (``other``, 14; 3 with a hint, "no, the younger one") or a follow-up on the same fact
  (``control``, 6). The question and the bot's reply are stored, as a chatbot would. Reported: the gold turn first
  among the memories, among them, and (``other``) the fact the reply used among them. m01 is the dev case the
  brief to its writer quoted (nu49's two plots).
* ``benchmarks/data/in_session_updates/in_session_updates.json`` (U1, 32 scenarios, blind: only counts reported to
  the developer): earlier sessions state a fact; the current conversation changes it (``update``, 20) or changes
  another thing (``control``, 12); then the question, as the conversation's next message. Reported: the old value
  among the memories given, the answer shown (memories or the recent window), among the memories, memories given.
  Stop 46 added "stale unchallenged" (the old value given with no answer above it) and "gold first".
* ``in_session_updates2.json`` .. ``in_session_updates5.json`` (U2, U2b, U2c, U2d; 36 / 36 / 36 / 40 scenarios, each
  written blind by a helper before the change it judged: helper-153 .. helper-156): the same format; sets 4 and 5 have
  changes without a change word (set 4) and neighbours' changes that share the question's words (set 5's 16
  controls).
* ``followups/followups.json``, ``followups2.json`` (F1, F1b / F1c; 36 each, blind: helper-159, helper-160): a
  question answered, then an ``elliptical`` follow-up about the same thing ("and what's the venue for that one?"), a
  ``named`` one about another thing, or a ``shift`` to a new topic; scored as the memory corrections are.
* ``named_documents/named_documents.json`` (T2; 36, blind: helper-161): personal questions naming a document by its
  title (``names_doc``) and ``control`` questions sharing one title word; scored as statements_docs.
* ``memory_corrections/memory_corrections2.json`` (O1, stop 47; 30, blind, helper-written in stop 46): the memory
  corrections' format; O1 was judged on it.
* ``followups/followups3.json`` (F2, stop 47; 36, blind, helper-166): ``answer_named`` follow-ups after a question that
  named nothing, answered by naming the thing ("what's my next shoot?" / "Your next shoot is the Okafor wedding." /
  "and where is it?"), ``question_named`` and ``shift``; scored as the memory corrections are.
* ``general_questions/general_questions.json`` .. ``general_questions4.json`` (G1 - G1d, stop 47; 48 each, blind,
  helper-163, -167, -168, -169): one earlier session, then a ``general`` question on the user's own topic (memories are
  noise) or a ``personal`` one (the gold turn should be given); scored as the statements. ``general_questions_docs.json``
  (G1s; 40, blind, helper-170): the same with documents, one answering each general question.
* ``buried_facts/buried_facts.json`` (S1, stop 48; 40, blind, helper-171): earlier sessions, then a plain question in a
  new session (the in-session format with no current turns). ``buried`` (20): the answer is one sentence of a long
  user turn about other things, and short turns share the question's words; ``plain`` (12): the answer is a short
  turn, long turns mention its words in passing; ``update`` (8): the value changed in a later session (5 of the 8
  inside a long turn). Judged sentence vectors as the default.
* ``benchmarks/data/statements_docs/statements_docs.json`` (ST2, 36, blind): 3-5 documents of the user's world, an
  earlier session (none in a few), then a ``plain`` statement (16: news that needs no document), an ``implied`` one
  (10: "My flight got cancelled this morning.", a document answers the need) or a ``question`` (10). Reported:
  messages given any passage, passages given, the gold document given.

Each scenario runs in a fresh store (the real model, embedded Chroma, a manual clock), with the gate's own route.
Nothing is chosen on these sets: neither change has a constant.

Usage::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python benchmarks/bench_new_session.py \\
        [--sets doc_drift statements memory_corrections in_session_updates in_session_updates2 in_session_updates3
        in_session_updates4 in_session_updates5 followups followups2 followups3 named_documents statements_docs
        memory_corrections2 general_questions general_questions2 general_questions3 general_questions4
        general_questions_docs buried_facts]
        [--out benchmarks/results/new_session]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chatrecall
from chatrecall._bench._common import kind_totals, machine_info, md_table, write_results
from chatrecall.testing import ManualClock

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"


@contextlib.contextmanager
def fresh_store() -> Iterator[tuple[chatrecall.ChatRecall, ManualClock]]:
    """A fresh embedded store with the real model, on a manual clock."""
    with tempfile.TemporaryDirectory() as d:
        clock = ManualClock(1_780_000_000.0)
        cr = chatrecall.connect(path=d, clock=clock)
        try:
            yield cr, clock
        finally:
            cr.close()


def feed(cr: chatrecall.ChatRecall, clock: ManualClock, sessions: list[list[dict[str, str]]], *,
         days_between: float = 3) -> None:
    """Store earlier sessions (``before0``, ``before1``...), a minute between turns, days between sessions."""
    for n, session in enumerate(sessions):
        for turn in session:
            cr.add(turn["content"], user_id="u", session_id=f"before{n}", role=turn["role"])
            clock.advance(60)
        clock.advance(days_between * 86400)


def ask(sc: dict[str, Any], message: str) -> chatrecall.RetrievalResult:
    """``message`` in a new session, after the scenario's documents and earlier session, in a fresh store."""
    with fresh_store() as (cr, clock):
        if sc.get("documents"):
            cr.add_documents([{"id": x["id"], "title": x["title"], "text": x["text"]} for x in sc["documents"]])
        feed(cr, clock, [sc["history"]], days_between=5)
        return cr.retrieve(message, user_id="u", session_id="now")


def ask_after_correction(sc: dict[str, Any]) -> chatrecall.RetrievalResult:
    """The scenario's question in a new session, its reply stored, then its correction (or follow-up)."""
    with fresh_store() as (cr, clock):
        feed(cr, clock, sc["history"])
        cr.retrieve(sc["question"], user_id="u", session_id="now")
        cr.add(sc["question"], user_id="u", session_id="now")
        clock.advance(30)
        cr.add(sc["assistant_reply"], user_id="u", session_id="now", role="assistant")
        clock.advance(60)
        return cr.retrieve(sc["correction"], user_id="u", session_id="now")


def score_memory_correction(sc: dict[str, Any]) -> dict[str, Any]:
    res = ask_after_correction(sc)
    mems = [i.text for i in res.items if i.source == "memory"]
    first = sc["first_fact"]
    return {"id": sc["id"], "kind": sc["kind"], "route": res.route.value, "memories": [m[:60] for m in mems],
            "gold_first": bool(mems) and sc["gold"] in mems[0], "gold_injected": any(sc["gold"] in m for m in mems),
            "first_fact_injected": sc["kind"] == "other" and any(first in m for m in mems)}


def ask_in_conversation(sc: dict[str, Any]) -> chatrecall.RetrievalResult:
    """The scenario's question as the next message of its current conversation, after its earlier sessions."""
    with fresh_store() as (cr, clock):
        feed(cr, clock, sc["history"])
        for turn in sc["current"]:
            cr.add(turn["content"], user_id="u", session_id="now", role=turn["role"])
            clock.advance(60)
        return cr.retrieve(sc["question"], user_id="u", session_id="now")


def score_in_session(sc: dict[str, Any]) -> dict[str, Any]:
    res = ask_in_conversation(sc)
    mems = [i.text for i in res.items if i.source == "memory"]
    shown = mems + [i.text for i in res.recent]
    stale = sc.get("stale")
    at_stale = next((n for n, m in enumerate(mems) if stale is not None and stale in m), None)
    at_gold = next((n for n, m in enumerate(mems) if sc["gold"] in m), None)
    return {"id": sc["id"], "kind": sc["kind"], "route": res.route.value, "memories": [m[:60] for m in mems],
            "stale_injected": at_stale is not None,
            "stale_unchallenged": at_stale is not None and (at_gold is None or at_gold > at_stale),
            "gold_first": at_gold == 0,
            "gold_shown": any(sc["gold"] in t for t in shown), "gold_in_memories": any(sc["gold"] in m for m in mems),
            "memories_given": len(mems)}


def score_statement_docs(sc: dict[str, Any]) -> dict[str, Any]:
    res = ask(sc, sc["message"])
    docs = [i.record.session_id for i in res.passages if i.record is not None]
    gold = sc.get("gold_doc")
    return {"id": sc["id"], "kind": sc["kind"], "route": res.route.value, "docs": docs,
            "any_passage": bool(docs), "passages": len(docs), "gold_injected": gold is not None and gold in docs}


def score_drift(sc: dict[str, Any]) -> dict[str, Any]:
    res = ask(sc, sc["question"])
    docs = [i.record.session_id for i in res.passages if i.record is not None]
    return {"id": sc["id"], "kind": sc["kind"], "route": res.route.value, "docs": docs,
            "gold_first": bool(docs) and docs[0] == sc["gold_doc"], "gold_injected": sc["gold_doc"] in docs,
            "distractor_injected": sc.get("distractor_doc") is not None and sc["distractor_doc"] in docs}


def score_statement(sc: dict[str, Any]) -> dict[str, Any]:
    res = ask(sc, sc["message"])
    mems = [i for i in res.items if i.source == "memory"]
    gold = sc.get("gold")
    return {"id": sc["id"], "kind": sc["kind"], "route": res.route.value, "memories": len(mems),
            "scores": [round(i.score, 3) for i in mems],
            "any_memory": bool(mems), "gold_injected": gold is not None and any(gold in i.text for i in mems)}


_IN_SESSION = ("stale_injected", "stale_unchallenged", "gold_first", "gold_shown", "gold_in_memories", "memories_given")
SETS: dict[str, tuple[str, Callable[[dict[str, Any]], dict[str, Any]], tuple[str, ...]]] = {
    "doc_drift": ("doc_drift/doc_drift.json", score_drift, ("gold_first", "gold_injected", "distractor_injected")),
    "statements": ("statements/statements.json", score_statement, ("any_memory", "memories", "gold_injected")),
    **{f"general_questions{n}": (f"general_questions/general_questions{n}.json", score_statement,
                                 ("any_memory", "memories", "gold_injected")) for n in ("", "2", "3", "4", "_docs")},
    **{f"memory_corrections{n}": (f"memory_corrections/memory_corrections{n}.json", score_memory_correction,
                                  ("gold_first", "gold_injected", "first_fact_injected")) for n in ("", "2")},
    **{f"in_session_updates{n}": (f"in_session_updates/in_session_updates{n}.json", score_in_session, _IN_SESSION)
       for n in ("", "2", "3", "4", "5")},
    "buried_facts": ("buried_facts/buried_facts.json", score_in_session, _IN_SESSION),
    "followups": ("followups/followups.json", score_memory_correction, ("gold_first", "gold_injected")),
    "followups2": ("followups/followups2.json", score_memory_correction, ("gold_first", "gold_injected")),
    "followups3": ("followups/followups3.json", score_memory_correction, ("gold_first", "gold_injected")),
    "named_documents": ("named_documents/named_documents.json", score_statement_docs,
                        ("any_passage", "passages", "gold_injected")),
    "statements_docs": ("statements_docs/statements_docs.json", score_statement_docs,
                        ("any_passage", "passages", "gold_injected")),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", nargs="+", choices=sorted(SETS), default=sorted(SETS))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "new_session")
    args = ap.parse_args(argv)
    md = ["# One message in a new session (`benchmarks/bench_new_session.py`)", ""]
    result: dict[str, Any] = {"benchmark": "new_session", "sets": {}, "machine": machine_info()}
    for name in args.sets:
        rel, scorer, cols = SETS[name]
        rows = [scorer(sc) for sc in json.loads((DATA / rel).read_text(encoding="utf-8"))]
        table = kind_totals(rows, cols)
        result["sets"][name] = {"totals": table, "rows": rows}
        md += [f"## {rel}", "", md_table(table, ["n", *cols], first="kind"), ""]
    write_results(args.out, result, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
