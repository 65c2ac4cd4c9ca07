"""An LCEL chain that answers from chatrecall memory, and shows what was recalled and why.

    python examples/langchain_chain.py

Runs offline: embedded Chroma in a temp dir + the bundled MiniLM model, and a
tiny fake chat model. Set CHATRECALL_FAKE=1 for the in-memory fakes instead,
or CHATRECALL_LLM=<provider:model> (e.g. ``openai:gpt-4o-mini``) to answer with
a real model through ``init_chat_model``.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

import chatrecall
from chatrecall.adapters.langchain import ChatRecallRetriever

CONVERSATION = [
    ("user", "For the billing service we settled on Postgres 16, not MySQL."),
    ("assistant", "Noted: the billing service runs on Postgres 16."),
    ("user", "The dashboard frontend will be written in Svelte."),
    ("user", "My cat Miso knocked my coffee over during the standup."),
    ("user", "Deploys go through Helm charts on the staging cluster first."),
]


class FirstLineModel(BaseChatModel):
    """Offline stand-in for an LLM: answers with the first recalled line of its context."""

    @property
    def _llm_type(self) -> str:
        return "first-line-fake"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        context = messages[0].text.split("\n")[1:]  # line 0 is the "Context:" header
        answer = f"From memory: {context[0]}" if context and context[0] else "I have nothing on that."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])


def make_engine(path: str) -> chatrecall.ChatRecall:
    if os.environ.get("CHATRECALL_FAKE") == "1":
        from chatrecall.testing import fake_engine

        return fake_engine()
    return chatrecall.connect(path=path)


def make_model() -> BaseChatModel:
    if os.environ.get("CHATRECALL_LLM"):
        from langchain.chat_models import init_chat_model

        return init_chat_model(os.environ["CHATRECALL_LLM"])
    return FirstLineModel()


def format_docs(docs: list[Document]) -> str:
    return "\n".join(d.page_content for d in docs)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cr = make_engine(tmp)
        cr.add_many({"text": text, "user_id": "alice", "session_id": "monday", "role": role}
                    for role, text in CONVERSATION)
        cr.add("Our billing service uses MongoDB.", user_id="bob", session_id="b1")  # another user: never recalled

        retriever = ChatRecallRetriever(engine=cr, user_id="alice", k=2)
        question = "Which database did we choose for the billing service?"

        print(f"question: {question}")
        for doc in retriever.invoke(question):
            md = doc.metadata
            comps = " ".join(f"{k}={v:.2f}" for k, v in md["components"].items())
            print(f"recalled: score={md['score']:.3f} route={md['route']} [{md['why']}] {comps}")
            print(f"          {doc.page_content}")

        prompt = ChatPromptTemplate.from_messages(
            [("system", "Context:\n{context}"), ("human", "{question}")])
        chain = ({"context": retriever | format_docs, "question": RunnablePassthrough()}
                 | prompt | make_model() | StrOutputParser())
        print(f"answer: {chain.invoke(question)}")

        # mode="retrieve" runs the gate first: small talk needs no lookup at all.
        gated = ChatRecallRetriever(engine=cr, user_id="alice", mode="retrieve", k=2)
        for message in ("Thanks, that's all!", "Remember what we decided about deploys?"):
            docs = gated.invoke(message)
            print(f"gated: {message!r} -> docs={len(docs)} ({cr.decide(message).explain()})")
            for doc in docs[:1]:
                print(f"          route={doc.metadata['route']} {doc.page_content}")
        cr.close()


if __name__ == "__main__":
    main()
