"""A ``create_agent`` agent with chatrecall memory and a pin tool.

    python examples/langchain_agent.py

Turn 1: the user states a standing preference and the agent calls the
``pin_constraint`` tool. Turn 2: the pin is injected into the system message
(with the memory recalled for the question). Turn 3: the agent unpins it and
turn 4 runs without it. After every turn the middleware stores the user
message and the answer.

Runs offline with a scripted fake chat model. CHATRECALL_FAKE=1 uses the
in-memory fakes instead of Chroma + MiniLM; CHATRECALL_LLM=<provider:model>
drives the agent with a real model through ``init_chat_model``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import chatrecall
from chatrecall.adapters.langchain import ChatRecallMiddleware, make_pin_tools


class ScriptedToolModel(BaseChatModel):
    """Offline stand-in for a tool-calling LLM, driven by a few keyword rules."""

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedToolModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        last, system = messages[-1], messages[0].text if messages[0].type == "system" else ""
        text = last.text
        if last.type == "tool":
            reply = AIMessage(content=f"Done. ({text})")
        elif "from now on," in text.lower():
            rule = text[text.lower().index("from now on,") + 12:].strip().rstrip(".")
            reply = AIMessage(content="", tool_calls=[
                {"name": "pin_constraint", "args": {"text": rule[0].upper() + rule[1:]}, "id": "call-pin"}])
        elif "stop" in text.lower() and "kilometres" in text.lower():
            reply = AIMessage(content="", tool_calls=[
                {"name": "unpin_constraint", "args": {"pin": "kilometres"}, "id": "call-unpin"}])
        else:
            memory = [ln[2:].split("] ", 1)[-1] for ln in system.splitlines() if ln.startswith("- [")]
            pins = system.split("## Pinned constraints (always apply)\n", 1)[1:]
            rules = f" (applying: {pins[0].splitlines()[0][2:]})" if pins else ""
            reply = AIMessage(content=f"From memory{rules}: {memory[0]}" if memory else "Noted.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def make_engine(path: str) -> chatrecall.ChatRecall:
    if os.environ.get("CHATRECALL_FAKE") == "1":
        from chatrecall.testing import fake_engine

        return fake_engine()
    return chatrecall.connect(path=path)


def make_model() -> BaseChatModel:
    if os.environ.get("CHATRECALL_LLM"):
        from langchain.chat_models import init_chat_model

        return init_chat_model(os.environ["CHATRECALL_LLM"])
    return ScriptedToolModel()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cr = make_engine(tmp)
        # An earlier session of the same user.
        cr.add_many([
            {"text": "The team offsite is in Annecy, we rent the lakeside chalet.", "user_id": "alice",
             "session_id": "last-week"},
            {"text": "Our billing service runs on Postgres 16.", "user_id": "alice", "session_id": "last-week"},
        ])
        agent = create_agent(
            make_model(),
            tools=make_pin_tools(cr, "alice"),
            middleware=[ChatRecallMiddleware(cr, user_id="alice", session_id="today")],
            system_prompt="You are a helpful travel and ops assistant.",
        )
        turns = [
            "From now on, always give distances in kilometres.",
            "Remind me, where is the team offsite we talked about?",
            "Please stop using kilometres, miles are fine again.",
            "Where is the team offsite again?",
        ]
        for n, message in enumerate(turns, 1):
            out = agent.invoke({"messages": [{"role": "user", "content": message}]})
            state = out["chatrecall"]
            tools = [c["name"] for m in out["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
            print(f"turn {n}: user: {message}")
            if tools:
                print(f"        tool calls: {tools}")
            print(f"        pins injected: {[p['text'] for p in state['pins']]}")
            print(f"        route={state['route']} recalled: {[i['text'] for i in state['items']]}")
            print(f"        agent: {out['messages'][-1].text}")
        print(f"pins now: {[p.text for p in cr.pins('alice')]}")
        print(f"turns stored for session 'today': {cr.count('alice', 'today')}")
        cr.close()


if __name__ == "__main__":
    main()
