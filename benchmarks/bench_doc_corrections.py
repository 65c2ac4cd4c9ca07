#!/usr/bin/env python
"""Corrections of a document answer: does "no, I meant the other one" get the other document? (stop 44, D1)

Data: ``benchmarks/data/doc_corrections/doc_corrections.json``, 24 scenarios written by a helper who saw no code,
before the change it judged (D1) was run on it, and ``doc_corrections2.json`` (18: 12 corrections that do not say
"the other", 6 follow-ups), written the same way before D2: 2-4 look-alike documents (two markets' rules, two gyms, two clients'
style guides...), an earlier session mentioning both, a question in a new session answered from the wrong one
(``first_answer_doc``), the assistant's reply, then the user's next message. Kinds: ``other`` (12: "no, I meant the
other market, the Sunday one", "not that one, the one for the law firm"), ``named`` (6: "no, the Aerwest flight")
and ``control`` (6: a follow-up on the same document, "and is there an excess on that?"). Nothing is chosen on it:
D1 has no constant.

Each scenario runs in a fresh store (the real model, embedded Chroma, a manual clock): the documents added, the
history stored, the question retrieved and both turns stored, then the next message retrieved. Reported per kind:
the gold document first among the passages, among them, the wrong document among them.

Usage::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python benchmarks/bench_doc_corrections.py \\
        [--out benchmarks/results/doc_corrections]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import chatrecall
from chatrecall._bench._common import kind_totals, machine_info, md_table, write_results
from chatrecall.testing import ManualClock

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "doc_corrections"
KINDS = ("other", "named", "control")


def run_scenario(sc: dict[str, Any]) -> dict[str, Any]:
    """One scenario in a fresh store: the passages of the question and of the message after it."""
    with tempfile.TemporaryDirectory() as d:
        clock = ManualClock(1_780_000_000.0)
        cr = chatrecall.connect(path=d, clock=clock)
        try:
            cr.add_documents([{"id": x["id"], "title": x["title"], "text": x["text"]} for x in sc["documents"]])
            for turn in sc["history"]:
                cr.add(turn["content"], user_id="u", session_id="before", role=turn["role"])
                clock.advance(60)
            clock.advance(5 * 86400)
            first = cr.retrieve(sc["question"], user_id="u", session_id="now")
            cr.add(sc["question"], user_id="u", session_id="now")
            clock.advance(30)
            cr.add(sc["assistant_reply"], user_id="u", session_id="now", role="assistant")
            clock.advance(60)
            res = cr.retrieve(sc["correction"], user_id="u", session_id="now")
        finally:
            cr.close()
    docs = [i.record.session_id for i in res.passages if i.record is not None]
    return {"id": sc["id"], "kind": sc["kind"], "route": res.route.value,
            "question_docs": [i.record.session_id for i in first.passages if i.record is not None], "docs": docs,
            "gold_first": bool(docs) and docs[0] == sc["gold_doc"], "gold_injected": sc["gold_doc"] in docs,
            "wrong_injected": sc["wrong_doc"] is not None and sc["wrong_doc"] in docs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "doc_corrections")
    args = ap.parse_args(argv)
    md = ["# Corrections of a document answer (`benchmarks/bench_doc_corrections.py`)", ""]
    result: dict[str, Any] = {"benchmark": "doc_corrections", "files": {}, "machine": machine_info()}
    for path in sorted(DATA.glob("*.json")):
        rows = [run_scenario(sc) for sc in json.loads(path.read_text(encoding="utf-8"))]
        table = kind_totals(rows, ("gold_first", "gold_injected", "wrong_injected"), order=KINDS)
        result["files"][path.name] = {"totals": table, "rows": rows}
        md += [f"## {path.name}", "", md_table(table, ["n", "gold_first", "gold_injected", "wrong_injected"],
                                                 first="kind"), ""]
    write_results(args.out, result, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
