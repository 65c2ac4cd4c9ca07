"""LangChain integration: retriever, classic memory, agent middleware, chat history, pins.

Everything here converts between LangChain types and chatrecall types and calls
the engine; gating, scoring, budgeting and command parsing live in
:mod:`chatrecall.core`.

* :class:`ChatRecallRetriever` - a ``BaseRetriever`` over a user's memories
  (``mode="search"``) or over the gated, budgeted retrieval incl. corpus
  (``mode="retrieve"``); every ``Document`` carries score, components, route
  and reasons in its metadata.
* :class:`ChatRecallMemory` - ``langchain_classic`` memory for classic chains.
* :class:`ChatRecallMiddleware` - ``create_agent`` middleware: recall before
  each model call (injected into the system message), store the turn after the
  agent answers, expose what was injected in the ``chatrecall`` state key and a
  ``chatrecall_injected`` custom callback event.
* :class:`ChatRecallChatMessageHistory` - ``BaseChatMessageHistory`` for
  ``RunnableWithMessageHistory``.
* :class:`PinCallbackHandler` and :func:`make_pin_tools` - pin constraints from
  ``/pin`` chat commands or from agent tool calls.

Example:
    >>> import chatrecall
    >>> from chatrecall.adapters.langchain import ChatRecallRetriever
    >>> cr = chatrecall.connect(path="/tmp/cr")  # doctest: +SKIP
    >>> docs = ChatRecallRetriever(engine=cr, user_id="u1", k=3).invoke("billing database")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal
from uuid import UUID

from ._common import UNSET, check_engine, check_fields, check_flag, item_metadata, with_engine
from ._guard import require

require("langchain_core", "langchain", package="langchain-core")
require("langchain.agents", "langchain", package="langchain")
require("langchain_classic", "langchain", package="langchain-classic")

from langchain.agents.middleware.types import (  # noqa: E402
    AgentMiddleware,
    AgentState,
    ModelCallResult,
    ModelRequest,
    OmitFromInput,
)
from langchain.tools import ToolRuntime  # noqa: E402
from langchain_classic.base_memory import BaseMemory  # noqa: E402
from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    BaseCallbackHandler,
    CallbackManagerForRetrieverRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.chat_history import BaseChatMessageHistory  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.tools import BaseTool, StructuredTool, ToolException  # noqa: E402
from pydantic import ConfigDict, PrivateAttr  # noqa: E402
from typing_extensions import NotRequired  # noqa: E402

from chatrecall.core import (  # noqa: E402
    ChatRecall,
    ChatRecallError,
    ConfigError,
    GateDecision,
    InvalidInputError,
    NotFoundError,
    PinCommand,
    PinCommandResult,
    Record,
    RetrievalResult,
    Route,
    ScoredItem,
    Strategy,
    apply_pin_command,
    budget_for,
    check_id,
    check_k,
    check_pin_scope,
    check_strategy,
    closest_name,
    keywords_checked,
    parse_pin_command,
)

__all__ = [
    "ChatRecallAgentState",
    "ChatRecallChatMessageHistory",
    "ChatRecallMemory",
    "ChatRecallMiddleware",
    "ChatRecallRetriever",
    "PinCallbackHandler",
    "make_pin_tools",
    "message_to_turn",
    "record_to_message",
    "result_summary",
]

logger = logging.getLogger(__name__)

#: Name of the custom callback event the middleware dispatches after each recall.
INJECTED_EVENT = "chatrecall_injected"

#: LangChain message type -> chatrecall role.
_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


# ====================================================================== conversions
def _check_budget(budget_tokens: Any) -> int | None:
    if budget_tokens is not None and (
        not isinstance(budget_tokens, int) or isinstance(budget_tokens, bool) or budget_tokens < 0
    ):
        raise InvalidInputError(f"budget_tokens={budget_tokens!r} is invalid: must be an int >= 0")
    return budget_tokens


def _check_name(owner: str, name: str, value: Any, *, none: str | None = None) -> str | None:
    """``value`` if it is a non-empty str (or None when ``none`` says what None means), else a
    :class:`ConfigError` naming the argument and what to pass (nu48 #10: ``event_name=123`` was taken silently)."""
    if value is None and none is not None:
        return None
    if not isinstance(value, str) or not value.strip():
        also = f", or None {none}" if none is not None else ""
        raise ConfigError(f"{owner}: {name}={value!r:.60} is invalid (a {type(value).__name__}): pass a non-empty "
                          f"str{also}")
    return value


def _text_of(value: Any, name: str) -> str:
    """The text of a chain value: a str, or a message's text."""
    if isinstance(value, BaseMessage):
        return value.text
    if isinstance(value, str):
        return value
    raise InvalidInputError(f"{name} must be a str or a message, got {type(value).__name__}: {value!r:.60}")


def message_to_turn(message: BaseMessage, *, user_id: str, session_id: str) -> dict[str, Any] | None:
    """A LangChain message as a turn mapping for :meth:`ChatRecall.add_many`.

    Returns None for messages without text (an AI message that only calls tools).

    Example:
        >>> message_to_turn(HumanMessage("hi"), user_id="u1", session_id="s1")["role"]
        'user'
    """
    if not isinstance(message, BaseMessage):
        raise InvalidInputError(f"expected a LangChain message, got {type(message).__name__}: {message!r:.60}")
    text = message.text
    if not text.strip():
        return None
    if isinstance(message, ChatMessage):
        role = message.role
    else:
        role = _ROLE_OF_TYPE.get(message.type, message.type)
    metadata: dict[str, Any] = {}
    if isinstance(message, ToolMessage):
        metadata["tool_call_id"] = message.tool_call_id
    if message.name:
        metadata["name"] = message.name
    return {"text": text, "user_id": user_id, "session_id": session_id, "role": role, "metadata": metadata}


def record_to_message(record: Record) -> BaseMessage:
    """A stored turn as the LangChain message of its role (``user`` -> ``HumanMessage``...)."""
    name = record.metadata.get("name")
    kw: dict[str, Any] = {"content": record.text, "id": record.id}
    if isinstance(name, str):
        kw["name"] = name
    if record.role == "user":
        return HumanMessage(**kw)
    if record.role == "assistant":
        return AIMessage(**kw)
    if record.role == "system":
        return SystemMessage(**kw)
    if record.role == "tool" and isinstance(record.metadata.get("tool_call_id"), str):
        return ToolMessage(tool_call_id=str(record.metadata["tool_call_id"]), **kw)
    return ChatMessage(role=record.role, **kw)


def _reasons(result: RetrievalResult) -> list[str]:
    return [str(r) for r in result.gate.reasons]


def _document(item: ScoredItem, *, route: str, reasons: list[str]) -> Document:
    md: dict[str, Any] = dict(item.record.metadata) if item.record else {}
    md.update(id=item.id, route=route, reasons=list(reasons))
    md.update(item_metadata(item))
    return Document(page_content=item.text, id=item.id, metadata=md)


def result_summary(result: RetrievalResult) -> dict[str, Any]:
    """A JSON-safe summary of a retrieval: what was injected and why.

    Each of its ``items`` holds ``id``, ``text``, ``source``, ``score``, ``tier``, ``why`` and ``title`` (a
    passage's document title; None for a memory or an untitled document).

    This is what :class:`ChatRecallMiddleware` puts in the ``chatrecall`` state
    key and sends with the ``chatrecall_injected`` event.
    """
    return {
        "message": result.message,
        "route": result.route.value,
        "gate_route": result.gate.route.value,
        "confidence": round(result.gate.confidence, 4),
        "reasons": _reasons(result),
        "pins": [{"id": p.id, "text": p.text} for p in result.pins],
        "items": [
            {"id": i.id, "text": i.text, "source": i.source, "score": round(i.score, 4), "tier": i.tier, "why": i.why,
             "title": i.title}
            for i in result.items
        ],
        "recent": len(result.recent),
        "tokens_used": result.tokens_used,
        "tokens_left": result.tokens_left,
        "notes": list(result.notes),
        "context": result.context,
    }


def _latest_human(messages: Sequence[Any]) -> tuple[int, str] | None:
    """Index and text of the last human message (BaseMessage or ``{"role": "user"}`` dict)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, BaseMessage):
            if m.type == "human":
                return i, m.text
        elif isinstance(m, Mapping) and m.get("role") in ("user", "human") and isinstance(m.get("content"), str):
            return i, str(m["content"])
        elif isinstance(m, tuple) and len(m) == 2 and m[0] in ("user", "human") and isinstance(m[1], str):
            return i, m[1]
    return None


def _has_history(messages: Sequence[Any], before: int) -> bool:
    """Whether a human or AI message precedes index ``before``: the caller sends the conversation itself."""
    roles = ("user", "human", "assistant", "ai")
    role: Any
    for m in messages[:before]:
        if isinstance(m, BaseMessage):
            role = m.type
        elif isinstance(m, Mapping):
            role = m.get("role")
        elif isinstance(m, tuple) and len(m) == 2:
            role = m[0]
        else:
            continue
        if role in roles:
            return True
    return False


def _is_command(text: str) -> bool:
    try:
        return parse_pin_command(text) is not None
    except InvalidInputError:
        return True  # a malformed command is still a command, not conversation


# ====================================================================== retriever
class ChatRecallRetriever(BaseRetriever):
    """A LangChain retriever over one user's chatrecall memory.

    Example:
        >>> retriever = ChatRecallRetriever(engine=cr, user_id="u1", k=3)  # doctest: +SKIP
        >>> docs = retriever.invoke("which database for billing?", k=2)  # doctest: +SKIP
        >>> docs[0].metadata["score"], docs[0].metadata["why"]  # doctest: +SKIP

    Attributes:
        engine: The :class:`ChatRecall` engine.
        user_id: Whose memories; nobody else's are ever returned.
        session_id: ``search`` mode: restrict to this session. ``retrieve``
            mode: the current session (recent window, correction follow-up).
        k: Documents to return (also settable per call: ``invoke(q, k=2)``).
        mode: ``search`` ranks memories (:meth:`ChatRecall.search`, no gate);
            ``retrieve`` runs the gate and the budget (:meth:`ChatRecall.retrieve`)
            and returns the selected memories and corpus passages, which is
            empty when the gate decides no lookup is needed.
        strategy: Force a memory strategy (default: the query classifier's).
        budget_tokens: ``retrieve`` mode token budget override.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: ChatRecall
    user_id: str
    session_id: str | None = None
    k: int = 4
    mode: Literal["search", "retrieve"] = "search"
    strategy: Strategy | None = None
    budget_tokens: int | None = None

    def __init__(self, engine: Any = UNSET, /, **data: Any) -> None:
        # Checked before pydantic so bad input raises chatrecall errors, not ValidationError.
        data = with_engine(engine, data, "ChatRecallRetriever")
        check_fields(type(self), data)
        engine = check_engine(data.get("engine"), "ChatRecallRetriever")
        if data.get("user_id") is None:
            raise InvalidInputError("ChatRecallRetriever needs user_id: whose memories it searches, e.g. "
                                    "ChatRecallRetriever(engine=cr, user_id='u1') (one retriever per user)")
        check_id("user_id", data.get("user_id"), engine.limits)
        if data.get("session_id") is not None:
            check_id("session_id", data["session_id"], engine.limits)
        if "k" in data:
            if data["k"] is None:
                raise InvalidInputError("k=None is invalid: must be an int from 1 to 1000")
            check_k(data["k"])
        if data.get("mode", "search") not in ("search", "retrieve"):
            raise InvalidInputError(f"mode={data['mode']!r} is unknown; use 'search' or 'retrieve'")
        data["strategy"] = check_strategy(data.get("strategy"))
        _check_budget(data.get("budget_tokens"))
        super().__init__(**data)

    def _fetch(self, query: str, k: int | None, strategy: Any, kwargs: Mapping[str, Any]) -> list[Document]:
        if kwargs:
            raise InvalidInputError(
                f"ChatRecallRetriever got unknown argument(s) {sorted(kwargs)}; it accepts k, strategy"
            )
        n = check_k(k) or self.k
        strat = check_strategy(strategy) or self.strategy
        if self.mode == "search":
            items = self.engine.search(query, user_id=self.user_id, k=n, strategy=strat, session_id=self.session_id)
            return [_document(i, route="memory", reasons=[]) for i in items[:n]]
        result = self.engine.retrieve(
            query,
            user_id=self.user_id,
            session_id=self.session_id,
            k=n,
            strategy=strat,
            budget_tokens=self.budget_tokens,
        )
        reasons = _reasons(result)
        return [_document(i, route=result.route.value, reasons=reasons) for i in result.items[:n]]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        strategy: Strategy | str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return self._fetch(query, k, strategy, kwargs)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        strategy: Strategy | str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        # On the engine's bounded async pool: the event loop is never blocked.
        return await self.engine._arun(self._fetch, query, k, strategy, kwargs)


# ====================================================================== classic memory
class ChatRecallMemory(BaseMemory):
    """Memory for ``langchain_classic`` chains (``ConversationChain``, ``LLMChain``).

    ``load_memory_variables`` runs the gated retrieval for the chain's input and
    returns the formatted context (pins, recent turns, recalled memories and
    passages) under ``memory_key``; ``save_context`` stores the user input and
    the chain output as two turns; ``clear`` forgets the session.

    Example:
        >>> memory = ChatRecallMemory(engine=cr, user_id="u1", session_id="s1")  # doctest: +SKIP
        >>> chain = ConversationChain(llm=model, memory=memory)  # doctest: +SKIP

    Attributes:
        memory_key: Prompt variable receiving the context (default ``history``).
        input_key: Chain input holding the user message (default: the only
            input that is not a memory variable).
        output_key: Chain output holding the answer (default: the only output).
        route_key: When set, also return the route taken under this variable.
        k: Memories per retrieval (default: engine config).
        budget_tokens: Token budget override.
    """

    engine: ChatRecall
    user_id: str
    session_id: str
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    route_key: str | None = None
    k: int | None = None
    budget_tokens: int | None = None
    _last: RetrievalResult | None = PrivateAttr(default=None)

    def __init__(self, engine: Any = UNSET, /, **data: Any) -> None:
        data = with_engine(engine, data, "ChatRecallMemory")
        check_fields(type(self), data)
        engine = check_engine(data.get("engine"), "ChatRecallMemory")
        check_id("user_id", data.get("user_id"), engine.limits)
        check_id("session_id", data.get("session_id"), engine.limits)
        check_k(data.get("k"))
        _check_budget(data.get("budget_tokens"))
        if "memory_key" in data:
            _check_name("ChatRecallMemory", "memory_key", data["memory_key"])
        for name, none in (("input_key", "to find the user message itself"),
                           ("output_key", "to find the answer itself"), ("route_key", "to return no route")):
            _check_name("ChatRecallMemory", name, data.get(name), none=none)
        super().__init__(**data)

    @property
    def last_result(self) -> RetrievalResult | None:
        """The retrieval of the last ``load_memory_variables`` call (what was injected and why)."""
        return self._last

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key] + ([self.route_key] if self.route_key else [])

    def _input_text(self, inputs: Mapping[str, Any]) -> str:
        if not isinstance(inputs, Mapping):
            raise InvalidInputError(f"inputs must be a mapping, got {type(inputs).__name__}")
        if self.input_key is not None:
            if self.input_key not in inputs:
                raise InvalidInputError(f"input_key={self.input_key!r} is not in the chain inputs {sorted(inputs)}")
            return _text_of(inputs[self.input_key], f"inputs[{self.input_key!r}]")
        keys = [k for k in inputs if k not in self.memory_variables and k != "stop"]
        if len(keys) != 1:
            raise InvalidInputError(
                f"cannot tell which of the inputs {sorted(keys)} is the user message: set input_key"
            )
        return _text_of(inputs[keys[0]], f"inputs[{keys[0]!r}]")

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        text = self._input_text(inputs)
        result = self.engine.retrieve(
            text, user_id=self.user_id, session_id=self.session_id, k=self.k, budget_tokens=self.budget_tokens
        )
        self._last = result
        out: dict[str, Any] = {self.memory_key: result.context}
        if self.route_key:
            out[self.route_key] = result.route.value
        return out

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        text = self._input_text(inputs)
        if not isinstance(outputs, Mapping):
            raise InvalidInputError(f"outputs must be a mapping, got {type(outputs).__name__}")
        if self.output_key is not None:
            if self.output_key not in outputs:
                raise InvalidInputError(f"output_key={self.output_key!r} is not in the chain outputs {sorted(outputs)}")
            key = self.output_key
        elif len(outputs) == 1:
            key = next(iter(outputs))
        else:
            raise InvalidInputError(f"cannot tell which of the outputs {sorted(outputs)} is the answer: set output_key")
        answer = _text_of(outputs[key], f"outputs[{key!r}]")
        turns = [{"text": text, "user_id": self.user_id, "session_id": self.session_id, "role": "user"}]
        if answer.strip():
            turns.append({"text": answer, "user_id": self.user_id, "session_id": self.session_id, "role": "assistant"})
        self.engine.add_many(turns, defer_if_unavailable=True)  # the answer exists: a store outage must not lose it

    def clear(self) -> None:
        """Forget this session's turns and session pins (global pins stay)."""
        with contextlib.suppress(NotFoundError):  # nothing stored yet: already clear
            self.engine.forget(self.user_id, self.session_id)


# ====================================================================== chat history
class ChatRecallChatMessageHistory(BaseChatMessageHistory):
    """The turns of one session, stored in chatrecall (for ``RunnableWithMessageHistory``).

    Messages are stored as turns (``user``/``assistant``/``system``/``tool``
    roles) and so become searchable memories. Only the text is kept: an AI
    message that only calls tools is not stored. The engine stores a given
    text once per session, so a repeated identical message appears once.

    Example:
        >>> chain_with_history = RunnableWithMessageHistory(
        ...     chain, lambda sid: ChatRecallChatMessageHistory(cr, user_id="u1", session_id=sid),
        ...     input_messages_key="question", history_messages_key="history")  # doctest: +SKIP
    """

    @keywords_checked
    def __init__(self, engine: ChatRecall, *, user_id: str, session_id: str) -> None:
        self.engine = check_engine(engine, "ChatRecallChatMessageHistory")
        self.user_id = check_id("user_id", user_id, engine.limits)
        self.session_id = check_id("session_id", session_id, engine.limits)

    def records(self) -> list[Record]:
        """The session's stored turns, oldest first (during a store outage, from the engine's cached index of the
        user, with a warning logged; a process that has not read the user yet raises ``StoreUnavailableError``)."""
        return self.engine.history(self.user_id, self.session_id, cached_if_unavailable=True)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return [record_to_message(r) for r in self.records()]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if isinstance(messages, BaseMessage):
            messages = [messages]
        turns = [message_to_turn(m, user_id=self.user_id, session_id=self.session_id) for m in messages]
        self.engine.add_many([t for t in turns if t is not None], defer_if_unavailable=True)

    def clear(self) -> None:
        """Forget the session's turns (and its session pins)."""
        with contextlib.suppress(NotFoundError):
            self.engine.forget(self.user_id, self.session_id)

    async def aget_messages(self) -> list[BaseMessage]:
        """The session's messages, read on the engine's async pool (served as :meth:`records` is)."""
        return [record_to_message(r) for r in
                await self.engine.ahistory(self.user_id, self.session_id, cached_if_unavailable=True)]

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store messages as turns, on the engine's async pool."""
        if isinstance(messages, BaseMessage):
            messages = [messages]
        turns = [message_to_turn(m, user_id=self.user_id, session_id=self.session_id) for m in messages]
        await self.engine.aadd_many([t for t in turns if t is not None], defer_if_unavailable=True)

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        with contextlib.suppress(NotFoundError):
            await self.engine.aforget(self.user_id, self.session_id)


# ====================================================================== agent middleware
class ChatRecallAgentState(AgentState[Any]):
    """Agent state with the summary of the last recall (see :func:`result_summary`)."""

    chatrecall: NotRequired[Annotated[dict[str, Any] | None, OmitFromInput]]


def _merge_system(system: SystemMessage | None, context: str) -> SystemMessage:
    if system is None or not system.text.strip():
        return SystemMessage(content=context)
    return SystemMessage(content=f"{system.text}\n\n{context}")


class ChatRecallMiddleware(AgentMiddleware[ChatRecallAgentState, Any]):
    """Memory for ``langchain.agents.create_agent``.

    * ``before_agent``: checks that the run names the ids the middleware will
      need (a user; a session when it stores the turns), so a missing or
      misspelt one fails before the model is called, with nothing stored.
    * ``before_model``: runs :meth:`ChatRecall.retrieve` on the latest human
      message; the summary goes to the ``chatrecall`` state key and to a
      ``chatrecall_injected`` custom callback event. In a tool loop it runs
      before each model call, so the state key and :attr:`last_result`
      describe the last call's retrieval.
    * ``wrap_model_call``: appends the context (pins first, then recent turns,
      memories and passages, already fitted to the token budget) to the system
      message of the model request. The agent's message history is not changed.
      When that history already holds earlier turns (an agent with a
      checkpointer), the session's recent window is not injected again; its
      turns are still kept out of the memories found.
    * ``after_agent``: stores the human message and the final answer as turns
      (pin commands such as ``/pin ...`` search nothing and are not stored).
      When the store is unavailable the run still returns the answer: the
      turns are kept in the process and written at a later turn
      (``ChatRecall.add_many(..., defer_if_unavailable=True)``); the state's
      ``pending`` counts them and a ``degraded`` note says so.

    ``user_id`` / ``session_id`` are read per run from the runtime context
    (``agent.invoke(..., context={"user_id": "u1", "session_id": "s1"})``, a
    mapping or an object with those attributes), then from
    ``config["configurable"]`` (``user_id``, ``session_id`` or ``thread_id``),
    then from the constructor.

    Example:
        >>> agent = create_agent(model, tools=make_pin_tools(cr, "u1"),
        ...                      middleware=[ChatRecallMiddleware(cr, user_id="u1", session_id="s1")])  # doctest: +SKIP
        >>> out = agent.invoke({"messages": [{"role": "user", "content": "what db did we pick?"}]})  # doctest: +SKIP
        >>> out["chatrecall"]["route"], out["chatrecall"]["items"]  # doctest: +SKIP
    """

    state_schema = ChatRecallAgentState

    @keywords_checked
    def __init__(
        self,
        engine: ChatRecall,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        k: int | None = None,
        budget_tokens: int | None = None,
        strategy: Strategy | str | None = None,
        store_turns: bool = True,
        event_name: str | None = INJECTED_EVENT,
    ) -> None:
        super().__init__()
        self.engine = check_engine(engine, "ChatRecallMiddleware")
        self.user_id = None if user_id is None else check_id("user_id", user_id, engine.limits)
        self.session_id = None if session_id is None else check_id("session_id", session_id, engine.limits)
        self.k = check_k(k)
        self.budget_tokens = _check_budget(budget_tokens)
        self.strategy = check_strategy(strategy)
        self.store_turns = check_flag("ChatRecallMiddleware", "store_turns", store_turns)
        self.event_name = _check_name("ChatRecallMiddleware", "event_name", event_name,
                                      none="to dispatch no event")
        #: The last retrieval (debugging aid; with concurrent runs read the state key instead).
        self.last_result: RetrievalResult | None = None

    # ------------------------------------------------------------------ ids
    @staticmethod
    def _configurable() -> Mapping[str, Any]:
        """The run's ``config["configurable"]`` (empty outside a graph run)."""
        try:
            from langgraph.config import get_config

            return get_config().get("configurable") or {}
        except (ImportError, RuntimeError):
            return {}

    def _ids(self, runtime: Any) -> tuple[str, str | None]:
        conf = self._configurable()
        context = getattr(runtime, "context", None)
        run_user, run_session = _run_ids(context, conf)
        user_id = run_user or self.user_id
        session_id = run_session or self.session_id
        if user_id is None:
            raise InvalidInputError(
                f"ChatRecallMiddleware has no user_id{_misspelt_key(context, 'user_id', conf)}: pass "
                "ChatRecallMiddleware(cr, user_id=...) or agent.invoke(..., context={'user_id': ...})"
            )
        limits = self.engine.limits
        return check_id("user_id", user_id, limits), None if session_id is None else check_id(
            "session_id", str(session_id), limits
        )

    def _no_session(self, runtime: Any) -> InvalidInputError:
        return InvalidInputError(
            f"ChatRecallMiddleware needs a session_id to store turns"
            f"{_misspelt_key(getattr(runtime, 'context', None), 'session_id', self._configurable())}: pass "
            "session_id=..., context={'session_id': ...} or a thread_id, or store_turns=False"
        )

    def _check_run(self, state: Mapping[str, Any], runtime: Any) -> None:
        """Refuse a run that lacks an id the middleware will need (a user to search for; a session to store the
        turns in), before the model is called: the error used to come from ``after_agent``, once the model had
        answered, and the answer was lost (nu48 #8). A message without text needs neither."""
        found = _latest_human(state.get("messages") or [])
        if found is None or not found[1].strip():
            return
        session_id = self._ids(runtime)[1]
        if session_id is None and self.store_turns and not _is_command(found[1]):
            raise self._no_session(runtime)

    def before_agent(self, state: ChatRecallAgentState, runtime: Any) -> dict[str, Any] | None:
        self._check_run(state, runtime)
        return None

    async def abefore_agent(self, state: ChatRecallAgentState, runtime: Any) -> dict[str, Any] | None:
        self._check_run(state, runtime)  # no I/O: reads the run's context and config
        return None

    # ------------------------------------------------------------------ recall
    def _nothing_to_search(self, message: str, why: str) -> RetrievalResult:
        """The result of a turn without text: route none, nothing injected (the same shape as any turn)."""
        budget = self.budget_tokens if self.budget_tokens is not None else budget_for(
            message, (), Route.NONE, self.engine.budget_config)
        gate = GateDecision(route=Route.NONE, confidence=1.0, memory_score=0.0, corpus_score=0.0)
        return RetrievalResult(
            message=message, gate=gate, route=Route.NONE, strategy=None, query_type=None, items=(), recent=(),
            pins=(), rejected=(), tokens_used=0, tokens_left=budget, timings_ms={"total": 0.0},
            notes=(f"nothing searched: {why}; nothing injected, and nothing is stored",), context="",
        )

    def _recall(self, state: Mapping[str, Any], runtime: Any) -> dict[str, Any] | None:
        messages = state.get("messages") or []
        found = _latest_human(messages)
        if found is None or not found[1].strip():
            # no text to search with (an empty message, or no user message at all): not an error of the app,
            # but the state key keeps its usual shape, so out["chatrecall"]["route"] reads "none" (nu45)
            self.last_result = self._nothing_to_search(
                "" if found is None else found[1],
                "the conversation has no user message" if found is None else "the message has no text")
            return result_summary(self.last_result)
        user_id, session_id = self._ids(runtime)
        result = self.engine.retrieve(
            found[1],
            user_id=user_id,
            session_id=session_id,
            k=self.k,
            strategy=self.strategy,
            budget_tokens=self.budget_tokens,
            # "/pin ..." is a command, not conversation: nothing is searched (pins and the window still come)
            route=Route.NONE if _is_command(found[1]) else None,
            # a checkpointer (or the caller) already gives the model the earlier turns: not injected twice
            include_recent=not _has_history(messages, found[0]),
        )
        self.last_result = result
        return result_summary(result)

    def before_model(self, state: ChatRecallAgentState, runtime: Any) -> dict[str, Any] | None:
        summary = self._recall(state, runtime)
        if summary is not None and self.event_name:
            with contextlib.suppress(RuntimeError):  # no parent run: hook called outside a graph
                dispatch_custom_event(self.event_name, summary)
        return {"chatrecall": summary}

    async def abefore_model(self, state: ChatRecallAgentState, runtime: Any) -> dict[str, Any] | None:
        summary = await self.engine._arun(self._recall, state, runtime)
        if summary is not None and self.event_name:
            with contextlib.suppress(RuntimeError):
                await adispatch_custom_event(self.event_name, summary)
        return {"chatrecall": summary}

    def _inject(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        state: Mapping[str, Any] = request.state or {}
        summary: Mapping[str, Any] = state.get("chatrecall") or {}
        context = summary.get("context") or ""
        if not context:
            return request
        return request.override(system_message=_merge_system(request.system_message, context))

    def wrap_model_call(self, request: ModelRequest[Any], handler: Any) -> ModelCallResult:
        return handler(self._inject(request))  # type: ignore[no-any-return]

    async def awrap_model_call(self, request: ModelRequest[Any], handler: Any) -> ModelCallResult:
        return await handler(self._inject(request))  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ store
    def _store(self, state: Mapping[str, Any], runtime: Any) -> dict[str, Any] | None:
        if not self.store_turns:
            return None
        messages = list(state.get("messages") or [])
        found = _latest_human(messages)
        if found is None or not found[1].strip() or _is_command(found[1]):
            return self._nothing_stored(state, runtime)
        idx, question = found
        answer = next(
            (
                m.text
                for m in reversed(messages[idx + 1 :])
                if isinstance(m, AIMessage) and not m.tool_calls and m.text.strip()
            ),
            None,
        )
        user_id, session_id = self._ids(runtime)
        if session_id is None:  # before_agent refuses such a run; this guards a hook called on its own
            raise self._no_session(runtime)
        turns = [{"text": question, "user_id": user_id, "session_id": session_id, "role": "user"}]
        if answer is not None:
            turns.append({"text": answer, "user_id": user_id, "session_id": session_id, "role": "assistant"})
        # The model has answered: a store outage keeps the turns in the process (written at a later turn)
        # instead of failing the run and losing the answer.
        ids = self.engine.add_many(turns, defer_if_unavailable=True)
        pending = self.engine.pending_turns(user_id)
        summary = dict(state.get("chatrecall") or {})
        summary["stored"] = ids
        summary["pending"] = pending
        if pending:
            summary["notes"] = [*summary.get("notes", ()),
                                f"degraded: store unavailable: {pending} turns kept in this process wait to be "
                                "written at a later turn (lost if the process exits first)"]
        return {"chatrecall": summary}

    def _nothing_stored(self, state: Mapping[str, Any], runtime: Any) -> dict[str, Any] | None:
        """A turn that stores nothing (no text, a /pin command) still says how many turns wait from an outage, so
        ``out["chatrecall"]`` has the keys of any turn but ``stored``."""
        summary = state.get("chatrecall")
        if summary is None:
            return None
        try:
            user_id = self._ids(runtime)[0]
        except InvalidInputError:  # no user for this run: nothing of its can wait
            pending = 0
        else:
            pending = self.engine.pending_turns(user_id)
        return {"chatrecall": {**summary, "pending": pending}}

    def after_agent(self, state: ChatRecallAgentState, runtime: Any) -> dict[str, Any] | None:
        return self._store(state, runtime)

    async def aafter_agent(self, state: ChatRecallAgentState, runtime: Any) -> dict[str, Any] | None:
        return await self.engine._arun(self._store, state, runtime)


# ====================================================================== pins
def _command_text(inputs: Any, keys: Sequence[str]) -> str | None:
    """The user message in a chain's inputs: a str, a listed key, or the last human message."""
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, BaseMessage):
        return inputs.text if inputs.type == "human" else None
    if isinstance(inputs, Mapping):
        for key in keys:
            value = inputs.get(key)
            if isinstance(value, str):
                return value
        msgs = inputs.get("messages")
        if isinstance(msgs, Sequence) and not isinstance(msgs, str):
            found = _latest_human(msgs)
            return found[1] if found else None
    return None


def _check_input_keys(input_keys: Any) -> tuple[str, ...]:
    """``input_keys`` as a tuple of non-empty strs; a bare str (``input_keys="question"``, once read as the keys
    ``'q', 'u', ...``) or a non-iterable raises a :class:`ConfigError` naming it."""
    if isinstance(input_keys, str) or not isinstance(input_keys, Iterable):
        raise ConfigError(f"PinCallbackHandler: input_keys={input_keys!r:.60} is invalid (a "
                          f"{type(input_keys).__name__}): pass a list of input names, e.g. input_keys=['question']")
    keys = tuple(input_keys)
    for key in keys:
        _check_name("PinCallbackHandler", "input_keys item", key)
    return keys


class PinCallbackHandler(BaseCallbackHandler):
    """Applies ``/pin <text>``, ``/unpin <id or text>`` and ``/pins`` chat commands.

    Attach it to a run (``config={"callbacks": [handler]}``) or to the chat
    model. It inspects the latest human message when a chat model starts and
    the input of a top-level chain (a str, one of ``input_keys`` or the last
    human message in ``messages``). A command seen twice within one top-level
    run (chain start, then each model call) is applied once.

    The pin is stored when the command's run starts, so it is injected from
    the next retrieval on and on every later turn until unpinned.

    Example:
        >>> handler = PinCallbackHandler(cr, user_id="u1")  # doctest: +SKIP
        >>> chain.invoke({"question": "/pin answer in French"}, config={"callbacks": [handler]})  # doctest: +SKIP
        >>> handler.results[-1].message  # doctest: +SKIP
        "Pinned: 'answer in French'"

    Attributes:
        results: Every command applied, in order.
        errors: Commands that failed (unknown pin, pin limit, malformed). With
            ``raise_error=True`` they propagate out of the run instead.
    """

    run_inline = True  # apply the pin before the run goes on, also in async runs

    @keywords_checked
    def __init__(
        self,
        engine: ChatRecall,
        *,
        user_id: str,
        session_id: str | None = None,
        input_keys: Iterable[str] = ("input", "question", "query", "message"),
        raise_error: bool = False,
    ) -> None:
        self.engine = check_engine(engine, "PinCallbackHandler")
        self.user_id = check_id("user_id", user_id, engine.limits)
        self.session_id = None if session_id is None else check_id("session_id", session_id, engine.limits)
        self.input_keys = _check_input_keys(input_keys)
        self.raise_error = check_flag("PinCallbackHandler", "raise_error", raise_error)
        self.results: list[PinCommandResult] = []
        self.errors: list[ChatRecallError] = []
        self._last: str | None = None

    def handle(self, text: str) -> PinCommandResult | None:
        """Apply ``text`` if it is a pin command; returns what was done (None: not a command)."""
        error: ChatRecallError | None = None
        try:
            command: PinCommand | None = parse_pin_command(text)
        except InvalidInputError as exc:  # a malformed command ("/pin" alone)
            command, error = None, exc
        if command is None and error is None:
            return None
        key = repr(command) if command is not None else f"invalid\x1f{text.strip()}"
        if key == self._last:  # same command again within the run: already handled
            return None
        self._last = key
        try:
            if error is not None:
                raise error
            assert command is not None
            result = apply_pin_command(self.engine, command, user_id=self.user_id, session_id=self.session_id)
        except ChatRecallError as exc:
            self.errors.append(exc)
            logger.warning("pin command %r failed: %s", text[:80], exc)
            if self.raise_error:
                raise
            return None
        self.results.append(result)
        return result

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        if parent_run_id is not None:
            return
        self._last = None  # a new top-level run: commands count afresh
        text = _command_text(inputs, self.input_keys)
        if text is not None:
            self.handle(text)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        if parent_run_id is None:
            self._last = None
        for batch in messages:
            found = _latest_human(batch)
            if found is not None:
                self.handle(found[1])


def make_pin_tools(engine: ChatRecall, user_id: str | None = None, session_id: str | None = None, *,
                   scope: str = "user") -> list[BaseTool]:
    """Tools an agent calls to manage the user's pinned constraints.

    Returns ``[pin_constraint, unpin_constraint, list_pins]``. Failures (pin
    limit, unknown pin) come back to the model as an ``Error: ...`` tool
    message instead of ending the run.

    Without ``user_id`` the tools act for the run's user, read as
    :class:`ChatRecallMiddleware` reads it: the runtime context
    (``agent.invoke(..., context={"user_id": ...})``), then
    ``config["configurable"]``; one agent then serves every user. Tools built
    for one user refuse a run whose context names another (an error to the
    model; nothing is stored), so a shared agent never writes one user's pin
    under another's id.

    A pin is a standing constraint: by default (``scope="user"``) it applies
    in every session of the user, whatever thread the agent ran in.
    ``scope="session"`` pins for the run's session only (its ``session_id``,
    else ``thread_id``), or for ``session_id`` when given. ``list_pins``
    shows the user-wide pins plus the run's session's; ``unpin_constraint``
    also finds a pin made in another session.

    Example:
        >>> agent = create_agent(model, tools=make_pin_tools(cr), middleware=[ChatRecallMiddleware(cr)])  # doctest: +SKIP
        >>> agent.invoke({"messages": [...]}, context={"user_id": "u1"})  # doctest: +SKIP

    Raises:
        InvalidInputError: ``user_id`` or ``session_id`` is given and invalid, or ``scope`` is neither
            ``"user"`` nor ``"session"``.
    """
    engine = check_engine(engine, "make_pin_tools")
    scope = check_pin_scope(scope)
    bound_user = None if user_id is None else check_id("user_id", user_id, engine.limits)
    bound_session = None if session_id is None else check_id("session_id", session_id, engine.limits)

    def run(command: PinCommand, runtime: Any) -> str:
        try:
            user, session = _pin_tool_ids(engine, runtime, bound_user, bound_session)
            return apply_pin_command(engine, command, user_id=user, session_id=session, scope=scope).message
        except ChatRecallError as exc:
            raise ToolException(str(exc)) from exc

    def pin_constraint(text: str, runtime: ToolRuntime[Any, Any] = None) -> str:  # type: ignore[assignment]
        return run(PinCommand("pin", text), runtime)

    def unpin_constraint(pin: str, runtime: ToolRuntime[Any, Any] = None) -> str:  # type: ignore[assignment]
        return run(PinCommand("unpin", pin), runtime)

    def list_pins(runtime: ToolRuntime[Any, Any] = None) -> str:  # type: ignore[assignment]
        return run(PinCommand("list"), runtime)

    specs: list[tuple[Callable[..., str], str, str]] = [
        (
            pin_constraint,
            "pin_constraint",
            "Pin a standing constraint or preference the user wants applied on every future turn "
            "(e.g. 'Always answer in metric units'). Argument: text, the constraint as one sentence.",
        ),
        (
            unpin_constraint,
            "unpin_constraint",
            "Remove a pinned constraint when the user no longer wants it. Argument: pin, its id or its text.",
        ),
        (list_pins, "list_pins", "List the user's pinned constraints with their ids."),
    ]
    return [
        StructuredTool.from_function(func=f, name=name, description=desc, handle_tool_error=_tool_error)
        for f, name, desc in specs
    ]


def _run_ids(context: Any, configurable: Mapping[str, Any] | None) -> tuple[Any, Any]:
    """The (user, session) a run names: its runtime context (a mapping or an object with those attributes) over
    ``config["configurable"]`` (``user_id``; ``session_id`` or ``thread_id``); None where it names none."""
    conf = configurable or {}
    user = conf.get("user_id")
    session = conf.get("session_id") or conf.get("thread_id")
    if context is not None:
        get = context.get if isinstance(context, Mapping) else lambda name: getattr(context, name, None)
        user = get("user_id") or user
        session = get("session_id") or session
    return user, session


#: The keys of a run's context we read; a key close to one of them is named in the error when it is missing.
_CONTEXT_KEYS = ("user_id", "session_id")
#: The keys of a run's ``config["configurable"]`` we read (``thread_id`` stands for the session).
_CONFIGURABLE_KEYS = ("user_id", "session_id", "thread_id")


def _keys_of(values: Any) -> Iterable[Any]:
    """The keys of a mapping, or the attributes of an object; none for a value without either."""
    if values is None:
        return ()
    if isinstance(values, Mapping):
        return values.keys()
    try:
        return vars(values).keys()
    except TypeError:  # no __dict__ (slots, a plain value): nothing to compare
        return ()


def _misspelt_key(context: Any, wanted: str, configurable: Mapping[str, Any] | None = None) -> str:
    """`` (the run's context has 'userid': did you mean 'user_id'?)`` when a key of the run's context (a mapping,
    or an object's attributes), else of its ``config["configurable"]``, is a close misspelling of ``wanted`` (in
    ``configurable``, of ``thread_id`` too when ``wanted`` is the session); "" otherwise."""
    means = (wanted, "thread_id") if wanted == "session_id" else (wanted,)
    for where, keys, ours, meant in (("the run's context", _keys_of(context), _CONTEXT_KEYS, (wanted,)),
                                     ("the run's config['configurable']", _keys_of(configurable),
                                      _CONFIGURABLE_KEYS, means)):
        for key in keys:
            if not isinstance(key, str) or key in ours:
                continue
            # 0.75: "usr_id" or "sesion_id", not "org_id" or "run_id" (0.62 from "user_id"), nor LangGraph's
            # own configurable keys ("checkpoint_id", "__pregel_task_id")
            close = closest_name(key, ours, 0.75)
            if close in meant:
                return f" ({where} has {key!r}: did you mean {close!r}?)"
    return ""


def _pin_tool_ids(engine: ChatRecall, runtime: Any, bound_user: str | None,
                  bound_session: str | None) -> tuple[str, str | None]:
    """Whose pins a pin tool call manages: the bound user, or the run's; a run for another user is refused."""
    config = getattr(runtime, "config", None) or {}
    configurable = config.get("configurable")
    run_user, run_session = _run_ids(getattr(runtime, "context", None), configurable)
    if bound_user is not None:
        if run_user is not None and str(run_user) != bound_user:
            raise InvalidInputError(
                f"these pin tools were made for user_id={bound_user!r} and this run is for user_id={run_user!r}: "
                "nothing was stored; build them with make_pin_tools(cr) to act for each run's user")
        return bound_user, bound_session
    if run_user is None:
        raise InvalidInputError(f"the pin tools have no user_id"
                                f"{_misspelt_key(getattr(runtime, 'context', None), 'user_id', configurable)}"
                                ": pass agent.invoke(..., context={'user_id': ...}) or build them with "
                                "make_pin_tools(cr, user_id)")
    limits = engine.limits
    session = bound_session if bound_session is not None else run_session
    return check_id("user_id", str(run_user), limits), None if session is None else check_id(
        "session_id", str(session), limits)


def _tool_error(exc: ToolException) -> str:
    return f"Error: {exc}"
