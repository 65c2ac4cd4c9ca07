"""A ``create_agent`` agent whose long-term store is chatrecall (``ChatRecallStore``).

    python examples/langgraph_store.py

The agent has two tools that use the LangGraph store through ``ToolRuntime``:
``save_memory`` puts a fact under the namespace ``(user_id, "memories")`` and
``search_memories`` runs ``store.search`` (chatrecall's hybrid search, with
scores). The user id comes from the run's context, so Alice's agent run never
sees Bob's memories. Afterwards, ``cr.retrieve`` recalls what the agent stored
for the chatbot's next turn: the store and the memory layer are the same data.

Runs offline with a scripted fake chat model. CHATRECALL_FAKE=1 uses the
in-memory fakes instead of embedded Chroma + MiniLM.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

import chatrecall
from chatrecall.adapters.langgraph import ChatRecallStore


@dataclass
class UserContext:
    user_id: str


@tool
def save_memory(fact: str, runtime: ToolRuntime[UserContext]) -> str:
    """Save a fact about the user for later conversations."""
    assert runtime.store is not None
    key = hashlib.sha256(fact.encode()).hexdigest()[:12]
    runtime.store.put((runtime.context.user_id, "memories"), key, {"text": fact, "source": "agent"})
    return f"saved {key}"


@tool
def search_memories(query: str, runtime: ToolRuntime[UserContext]) -> str:
    """Search the user's saved facts."""
    assert runtime.store is not None
    hits = runtime.store.search((runtime.context.user_id, "memories"), query=query, limit=2)
    return "\n".join(f"{h.score:.3f} {h.value['text']}" for h in hits) or "(nothing saved)"


class ScriptedToolModel(BaseChatModel):
    """Offline stand-in for a tool-calling LLM: 'Remember: ...' saves, a question searches."""

    @property
    def _llm_type(self) -> str:
        return "scripted-store-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedToolModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if last.type == "tool":
            lines = last.text.splitlines()
            reply = AIMessage(content="Saved." if last.text.startswith("saved") else f"From memory: {lines[0]}")
        elif last.text.startswith("Remember:"):
            fact = last.text.removeprefix("Remember:").strip()
            reply = AIMessage(content="", tool_calls=[{"name": "save_memory", "args": {"fact": fact}, "id": "c1"}])
        else:
            reply = AIMessage(content="", tool_calls=[
                {"name": "search_memories", "args": {"query": last.text}, "id": "c2"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def make_engine(path: str) -> chatrecall.ChatRecall:
    if os.environ.get("CHATRECALL_FAKE") == "1":
        from chatrecall.testing import fake_engine

        return fake_engine()
    return chatrecall.connect(path=path)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cr = make_engine(tmp)
        store = ChatRecallStore(cr)
        agent = create_agent(ScriptedToolModel(), tools=[save_memory, search_memories], store=store,
                             context_schema=UserContext)
        runs = [
            ("alice", "Remember: Our billing service runs on Postgres 16."),
            ("alice", "Remember: The team offsite is in Annecy in June."),
            ("bob", "Remember: Bob's team deploys with Argo CD."),
            ("alice", "Which database does billing use?"),
            ("bob", "Which database does billing use?"),
        ]
        for user, message in runs:
            out = agent.invoke({"messages": [{"role": "user", "content": message}]},
                               context=UserContext(user_id=user))
            print(f"{user}: {message}\n  agent: {out['messages'][-1].text}")
        print(f"namespaces: {store.list_namespaces()}")
        res = cr.retrieve("Remember which database billing uses?", user_id="alice")
        print(f"retrieve(alice): route={res.route.value} top={res.items[0].text if res.items else None}")
        cr.close()


if __name__ == "__main__":
    main()
