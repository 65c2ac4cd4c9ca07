"""A LlamaIndex query engine over chatrecall: what was recalled for each question, and why.

    python examples/llamaindex_query_engine.py

Runs offline: embedded Chroma in a temp dir + the bundled MiniLM model, and
LlamaIndex's MockLLM (it echoes its prompt, so the answer shows exactly what
the LLM was given). Set CHATRECALL_FAKE=1 for the in-memory fakes instead, or
CHATRECALL_LLM=openai:<model> (needs ``llama-index-llms-openai`` and an API
key) to answer with a real model.
"""

from __future__ import annotations

import os
import tempfile

from llama_index.core.llms import LLM, MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

import chatrecall
from chatrecall.adapters.llamaindex import ChatRecallRetriever

CONVERSATION = [
    ("cheese", "user", "I'm starting the cheese project: a catalogue of French cheeses with tasting notes."),
    ("cheese", "assistant", "For the cheese project keep cheeses in a table with region, milk type and aging time."),
    ("cheese", "user", "We use Postgres, not SQLite, for the cheese catalogue database."),
    ("import", "user", "The import script crashes with ECONNREFUSED when it talks to the database."),
    ("import", "assistant", "ECONNREFUSED means nothing listens on the port: start Postgres or fix DATABASE_URL."),
    ("family", "user", "My sister Marie is visiting Lyon next month and wants cheese shop tips."),
]
DOCS = [{"id": "tribrid", "title": "TriBridConfig reference",
         "text": "TriBridConfig configures the tri-bridge network layer: bridge count, MTU and failover policy."}]
QUESTIONS = [
    "Remember which database we picked for the cheese catalogue?",
    "What does TriBridConfig do?",
    "Thanks, that's all!",
]


def make_engine(path: str) -> chatrecall.ChatRecall:
    if os.environ.get("CHATRECALL_FAKE") == "1":
        from chatrecall.testing import fake_engine

        return fake_engine()
    return chatrecall.connect(path=path)


def make_llm() -> LLM:
    spec = os.environ.get("CHATRECALL_LLM")
    if not spec:
        return MockLLM()  # echoes its prompt: the "answer" shows the context the LLM got
    provider, _, model = spec.partition(":")
    if provider != "openai":
        raise SystemExit(f"CHATRECALL_LLM={spec!r}: only openai:<model> is wired up in this example")
    from llama_index.llms.openai import OpenAI  # pip install llama-index-llms-openai

    return OpenAI(model=model or "gpt-4o-mini")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cr = make_engine(tmp)
        cr.add_many({"text": text, "user_id": "alice", "session_id": session, "role": role}
                    for session, role, text in CONVERSATION)
        cr.add_documents(DOCS)
        cr.pin("Answer in one short paragraph.", user_id="alice")
        cr.add("Bob's cheese catalogue runs on MongoDB.", user_id="bob", session_id="b1")  # never recalled for alice

        # mode="retrieve": the gate decides per question whether to search memory, the corpus, both or nothing.
        retriever = ChatRecallRetriever(cr, user_id="alice", mode="retrieve", k=3)
        engine = RetrieverQueryEngine.from_args(retriever, llm=make_llm())
        for question in QUESTIONS:
            response = engine.query(question)
            nodes = response.source_nodes
            md = nodes[0].node.metadata if nodes else {}
            print(f"Q: {question}")
            print(f"  route={md.get('route', 'none')} gate: {md.get('gate', '-')}")
            for n in nodes:
                m = n.node.metadata
                comps = "".join(f" {k}={v:.2f}" for k, v in m["components"].items())
                print(f"  recalled: [{m['source']}] score={n.score:.3f}{comps} why={m['why']}")
                print(f"    {n.node.get_content()}")
            answer = " ".join(str(response).split())
            print(f"  answer: {answer[:160]}")
            print()
        cr.close()


if __name__ == "__main__":
    main()
