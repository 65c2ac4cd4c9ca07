"""Pin a constraint mid-conversation with ``/pin``, then remove it with ``/unpin``.

    python examples/pin_via_callback.py

A plain LCEL chat chain gets its context from :class:`ChatRecallMemory`; a
:class:`PinCallbackHandler` in the run's callbacks turns ``/pin ...`` and
``/unpin ...`` messages into pins. The pin is in the prompt of every later turn
until it is unpinned.

Runs offline with a fake chat model. CHATRECALL_FAKE=1 uses the in-memory
fakes instead of Chroma + MiniLM; CHATRECALL_LLM=<provider:model> answers with
a real model through ``init_chat_model``.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

import chatrecall
from chatrecall.adapters.langchain import ChatRecallMemory, PinCallbackHandler

PIN_HEADER = "## Pinned constraints (always apply)\n"


class PinAwareModel(BaseChatModel):
    """Offline stand-in for an LLM: says which pinned constraints its prompt carries."""

    @property
    def _llm_type(self) -> str:
        return "pin-aware-fake"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        system = messages[0].text
        section = system.split(PIN_HEADER, 1)[1].split("\n\n", 1)[0] if PIN_HEADER in system else ""
        pins = [line[2:] for line in section.splitlines() if line.startswith("- ")]
        reply = f"Happy to help with: {messages[-1].text}"
        answer = f"(following: {'; '.join(pins)}) {reply}" if pins else reply
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
    return PinAwareModel()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cr = make_engine(tmp)
        memory = ChatRecallMemory(engine=cr, user_id="marie", session_id="lyon-trip")
        pins = PinCallbackHandler(cr, user_id="marie")
        prompt = ChatPromptTemplate.from_messages(
            [("system", "You help plan trips.\n\n{history}"), ("human", "{input}")])
        chain = RunnablePassthrough.assign(history=lambda x: memory.load_memory_variables(x)["history"]) \
            | prompt | make_model()

        for message in [
            "I'm planning a weekend in Lyon with my sister.",
            "/pin Always answer in French",
            "What should we pack for the weekend?",
            "Any restaurant ideas near the old town?",
            "/unpin french",
            "And what about museums?",
        ]:
            answer = chain.invoke({"input": message}, config={"callbacks": [pins]}).text
            if not message.startswith("/"):
                memory.save_context({"input": message}, {"output": answer})  # commands are not conversation
            pinned = [p.text for p in memory.last_result.pins] if memory.last_result else []
            print(f"user: {message}")
            print(f"  pins in prompt: {pinned}")
            print(f"  assistant: {answer}")
            if message.startswith("/") and pins.results:
                print(f"  [{pins.results[-1].message}]")
        print(f"pins now: {[p.text for p in cr.pins('marie')]}")
        print(f"turns stored: {cr.count('marie', 'lyon-trip')}")
        cr.close()


if __name__ == "__main__":
    main()
