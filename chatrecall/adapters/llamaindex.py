"""LlamaIndex adapter: retriever, chat memory, memory block, node postprocessor, embeddings.

Everything here converts between LlamaIndex types (``NodeWithScore``,
``ChatMessage``, ``QueryBundle``) and chatrecall's, then calls the core; the
gate, hybrid scoring, pins and token budget all live in :mod:`chatrecall.core`.

* :class:`ChatRecallRetriever` - a ``BaseRetriever`` over a user's memories
  (and the corpus), for ``RetrieverQueryEngine`` and friends.
* :class:`ChatRecallMemory` - a ``BaseMemory`` for ``SimpleChatEngine``,
  ``CondensePlusContextChatEngine`` and agents (``FunctionAgent``,
  ``ReActAgent``): exact recent history plus a system message with the
  user's pins and the gated, budgeted recall for the latest user message.
* :class:`ChatRecallMemoryBlock` - a block for LlamaIndex's own ``Memory``:
  messages flushed out of its FIFO go into chatrecall, recall comes back.
* :class:`ChatRecallPostprocessor` - re-ranks nodes from any retriever with
  chatrecall's hybrid score, near-duplicate suppression and token budget.
* :class:`ChatRecallEmbedding` / :class:`LlamaIndexEmbedder` - use a
  chatrecall embedder in LlamaIndex, or a LlamaIndex embedding in chatrecall.
* :func:`nodes_to_documents` - LlamaIndex documents and nodes as what
  :meth:`ChatRecall.add_documents` takes (text, id, title, metadata).

Example:
    >>> from llama_index.core.llms import MockLLM
    >>> from llama_index.core.query_engine import RetrieverQueryEngine
    >>> from chatrecall.testing import fake_engine
    >>> cr = fake_engine()
    >>> _ = cr.add("We use Postgres for billing", user_id="u1", session_id="s1")
    >>> qe = RetrieverQueryEngine.from_args(ChatRecallRetriever(cr, user_id="u1", mode="search"), llm=MockLLM())
    >>> qe.query("Which database do we use for billing?").source_nodes[0].node.text
    'We use Postgres for billing'
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from chatrecall.core import (
    Candidate,
    ChatRecall,
    ConfigError,
    Embedder,
    InvalidInputError,
    NotFoundError,
    Pin,
    RetrievalResult,
    ScoredItem,
    Turn,
    check_id,
    check_text,
    format_context,
    keywords_checked,
    rerank,
)

from ._common import UNSET, check_engine, check_fields, check_flag, item_metadata, with_engine
from ._guard import require

require("llama_index.core", "llamaindex", package="llama-index-core")

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr  # noqa: E402
from llama_index.core.callbacks import CallbackManager  # noqa: E402
from llama_index.core.llms import ChatMessage, MessageRole, TextBlock  # noqa: E402
from llama_index.core.memory import BaseMemory, BaseMemoryBlock  # noqa: E402
from llama_index.core.postprocessor.types import BaseNodePostprocessor  # noqa: E402
from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle, TextNode  # noqa: E402

__all__ = [
    "ChatRecallEmbedding",
    "ChatRecallMemory",
    "ChatRecallMemoryBlock",
    "ChatRecallPostprocessor",
    "ChatRecallRetriever",
    "LlamaIndexEmbedder",
    "item_to_node",
    "nodes_to_documents",
    "pin_to_node",
    "result_to_context_node",
    "result_to_nodes",
]

#: Diagnostic metadata: kept on the node for the caller, hidden from the LLM prompt and from embeddings.
_DIAGNOSTIC_KEYS = (
    "source",
    "score",
    "components",
    "tier",
    "why",
    "route",
    "reasons",
    "gate",
    "user_id",
    "session_id",
    "role",
    "timestamp",
    "tokens",
)
_RERANK_KEY = "chatrecall"
_DEFAULT_ROLES = ("user", "assistant")


# ====================================================================== conversions
def _gate_fields(result: RetrievalResult | None) -> dict[str, Any]:
    if result is None:
        return {}
    return {
        "route": result.route.value,
        "reasons": [str(r) for r in result.gate.reasons],
        "gate": result.gate.explain(),
    }


def item_to_node(item: ScoredItem, result: RetrievalResult | None = None) -> NodeWithScore:
    """A chatrecall :class:`ScoredItem` as a LlamaIndex ``NodeWithScore``.

    The node id is the record id; metadata carries ``source``, ``score``,
    ``components``, ``tier``, ``why`` and, when ``result`` is given, the
    ``route`` taken and the gate's ``reasons``. Those keys are excluded from
    the LLM prompt and from embeddings; a corpus ``title`` stays visible.
    """
    md = {**item_metadata(item), **_gate_fields(result)}
    rec = item.record
    if rec is not None and "title" in rec.metadata:
        md["title"] = rec.metadata["title"]
    node = TextNode(
        id_=item.id,
        text=item.text,
        metadata=md,
        excluded_llm_metadata_keys=list(_DIAGNOSTIC_KEYS),
        excluded_embed_metadata_keys=list(_DIAGNOSTIC_KEYS),
    )
    return NodeWithScore(node=node, score=item.score)


def pin_to_node(pin: Pin, result: RetrievalResult | None = None) -> NodeWithScore:
    """A pinned constraint as a node with score 1.0 and ``source="pin"``."""
    md: dict[str, Any] = {
        "source": "pin",
        "score": 1.0,
        "components": {},
        "tier": "pin",
        "why": "pinned constraint",
        "tokens": pin.tokens,
        "user_id": pin.user_id,
        "session_id": pin.session_id,
        "timestamp": pin.created_at,
        **_gate_fields(result),
    }
    node = TextNode(
        id_=pin.id,
        text=pin.text,
        metadata=md,
        excluded_llm_metadata_keys=list(_DIAGNOSTIC_KEYS),
        excluded_embed_metadata_keys=list(_DIAGNOSTIC_KEYS),
    )
    return NodeWithScore(node=node, score=1.0)


def result_to_nodes(result: RetrievalResult, *, include_pins: bool = True) -> list[NodeWithScore]:
    """Pins (first, when ``include_pins``) then the selected items of a :meth:`ChatRecall.retrieve` result."""
    pins = [pin_to_node(p, result) for p in result.pins] if include_pins else []
    return pins + [item_to_node(it, result) for it in result.items]


def result_to_context_node(result: RetrievalResult, *, include_pins: bool = True) -> NodeWithScore:
    """A :meth:`ChatRecall.retrieve` result as ONE node: the dated, labelled block the LLM should read.

    The text is what :class:`ChatRecallMemory` puts in the system message (pins, then memories with their dates
    and the documents' passages, under headings saying what each is and when "now" is), without the recent
    window (the chat history holds it). It is empty when the turn needs nothing: the node is still returned, so
    an engine that answers from its nodes (``CondensePlusContextChatEngine``, ``ContextChatEngine``) calls its
    LLM instead of answering "Empty Response". Metadata (hidden from the LLM): ``route``, ``reasons``, ``gate``,
    ``at`` and ``item_ids``.
    """
    pins = result.pins if include_pins else ()
    text = format_context(pins, (), result.items, now=result.at)
    md: dict[str, Any] = {
        "source": "context",
        **_gate_fields(result),
        "at": result.at,
        "item_ids": [it.id for it in result.items],
    }
    keys = [*_DIAGNOSTIC_KEYS, "at", "item_ids"]
    node = TextNode(text=text, metadata=md, excluded_llm_metadata_keys=keys, excluded_embed_metadata_keys=keys)
    return NodeWithScore(node=node, score=1.0)


#: Metadata keys a LlamaIndex document's title is read from, in order (``file_name``: SimpleDirectoryReader's).
_TITLE_KEYS = ("title", "file_name")


def nodes_to_documents(nodes: BaseNode | NodeWithScore | Iterable[BaseNode | NodeWithScore]) -> list[dict[str, Any]]:
    """LlamaIndex documents or nodes as the mappings :meth:`ChatRecall.add_documents` takes.

    Each becomes ``{"text", "id", "title", "metadata"}``: the node's text (without its metadata), its
    ``id_`` (``doc_id``) as the document id, so adding it again replaces the old version, its
    ``metadata["title"]`` or else ``metadata["file_name"]`` as the title (searched with every chunk, shown
    as the passage's label), and the rest of its metadata; ``None`` values are left out.
    A ``NodeWithScore`` (a retriever's result) gives its node.

    LlamaIndex gives a ``Document`` a random id unless one is set: load files with
    ``SimpleDirectoryReader(..., filename_as_id=True)`` (or pass ``Document(doc_id=...)``) so that loading
    them again replaces them rather than adding them twice.

    Example:
        >>> from llama_index.core import Document
        >>> nodes_to_documents([Document(text="Closed on Sundays.", doc_id="hours", metadata={"file_name": "hours.txt"})])
        [{'text': 'Closed on Sundays.', 'id': 'hours', 'title': 'hours.txt', 'metadata': {'file_name': 'hours.txt'}}]

    Args:
        nodes: A LlamaIndex ``Document``, ``TextNode`` (any ``BaseNode``) or ``NodeWithScore``, or an
            iterable of them.

    Returns:
        One mapping per node, in order: ``cr.add_documents(nodes_to_documents(docs))``.

    Raises:
        InvalidInputError: An item is not a LlamaIndex node, or a metadata value is not a str, int, float or
            bool (chatrecall stores flat metadata).
    """
    if isinstance(nodes, (BaseNode, NodeWithScore)):
        nodes = [nodes]  # one node; a pydantic model would be iterated as its fields
    elif isinstance(nodes, (str, bytes, Mapping)) or not isinstance(nodes, Iterable):
        raise InvalidInputError(f"nodes={type(nodes).__name__} is invalid: pass LlamaIndex documents or nodes (a "
                                "Document, TextNode or NodeWithScore, or a list of them); a str or a mapping "
                                "goes to ChatRecall.add_documents as it is")
    out = []
    for n, node in enumerate(nodes):
        if isinstance(node, NodeWithScore):
            node = node.node
        if not isinstance(node, BaseNode):
            raise InvalidInputError(f"nodes[{n}] is a {type(node).__name__}, not a LlamaIndex node: pass Document, "
                                    "TextNode or NodeWithScore items (a str or a mapping goes to "
                                    "ChatRecall.add_documents as it is)")
        metadata: dict[str, Any] = {}
        for key, value in node.metadata.items():
            if value is None:
                continue
            if not isinstance(value, (str, int, float, bool)):
                raise InvalidInputError(
                    f"nodes[{n}] (id {node.node_id!r}): metadata[{key!r}]={value!r:.60} is a {type(value).__name__}; "
                    "chatrecall stores str, int, float or bool values: make it one (', '.join(...) for a list) "
                    "or delete the key from the node's metadata")
            metadata[key] = value
        title = next((str(v) for k in _TITLE_KEYS if str(v := metadata.get(k, "")).strip()), None)
        metadata.pop("title", None)  # it is the title
        doc: dict[str, Any] = {"text": node.get_content(metadata_mode=MetadataMode.NONE), "id": node.node_id}
        if title is not None:
            doc["title"] = title
        doc["metadata"] = metadata
        out.append(doc)
    return out


def _message_text(message: ChatMessage | str | None) -> str:
    if message is None:
        return ""
    if isinstance(message, str):
        return message
    return message.content or ""


def _role(message: ChatMessage) -> str:
    role = message.role
    return role.value if isinstance(role, MessageRole) else str(role)


def _last_user_text(messages: Sequence[ChatMessage] | None) -> str:
    for m in reversed(messages or ()):
        if _role(m) == MessageRole.USER.value:
            text = _message_text(m)
            if text.strip():
                return text
    return ""


def _check_mode(mode: str) -> str:
    if mode not in ("search", "retrieve"):
        raise ConfigError(f"mode={mode!r} is invalid: use 'search' (always rank memories) or 'retrieve' (gated)")
    return mode


# ====================================================================== retriever
class ChatRecallRetriever(BaseRetriever):
    """A LlamaIndex retriever over one user's chatrecall memories.

    Example:
        >>> from chatrecall.testing import fake_engine
        >>> cr = fake_engine()
        >>> _ = cr.add("We deploy with Helm", user_id="u1", session_id="s1")
        >>> r = ChatRecallRetriever(cr, user_id="u1", mode="search")
        >>> [n.node.text for n in r.retrieve("how do we deploy with Helm?")]
        ['We deploy with Helm']

    Args:
        engine: The chatrecall engine.
        user_id: Whose memories to read; nobody else's are ever returned.
        session_id: In ``retrieve`` mode the current session (session pins,
            correction follow-up); in ``search`` mode a filter restricting
            the search to that session.
        k: How many memories to rank (default: the engine's ``top_k``).
        mode: ``retrieve`` (default): the gate decides whether and where to
            search (memory, corpus, both or nothing), items are budgeted and
            the user's pins come first; ``search``: always rank memories,
            no gate, no budget, no pins.
        strategy: Force a memory strategy (default: the query classifier).
        include_pins: ``retrieve`` mode only: return pins as nodes.
        budget_tokens: ``retrieve`` mode only: override the token budget.
        as_context: ``retrieve`` mode only: return one node holding the
            dated, labelled context (:func:`result_to_context_node`), empty
            when the turn needs nothing. For a chat engine that answers from
            its retriever's nodes (``CondensePlusContextChatEngine``,
            ``ContextChatEngine``): with no node at all, LlamaIndex answers
            "Empty Response" without calling the LLM, which is what the gate
            makes of every greeting otherwise.
        history: ``retrieve`` mode: the history-only :class:`ChatRecallMemory`
            the chat engine sends beside this retriever's context; memories
            its latest ``get`` returned as history are left out (they would
            reach the prompt twice).
        callback_manager: LlamaIndex callbacks.

    Nodes are ``TextNode`` with the record id and metadata ``source``,
    ``score``, ``components``, ``tier``, ``why`` and (``retrieve`` mode)
    ``route``, ``reasons``, ``gate``; none of these reach the LLM prompt.
    :attr:`last_result` is the latest ``retrieve``-mode result, for
    ``last_result.explain()``.

    Raises:
        ConfigError: ``mode`` is unknown, or ``as_context`` is asked in
            ``search`` mode.
    """

    @keywords_checked
    def __init__(
        self,
        engine: ChatRecall,
        user_id: str,
        *,
        session_id: str | None = None,
        k: int | None = None,
        mode: Literal["search", "retrieve"] = "retrieve",
        strategy: str | None = None,
        include_pins: bool = True,
        budget_tokens: int | None = None,
        as_context: bool = False,
        history: ChatRecallMemory | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self.engine = check_engine(engine, "ChatRecallRetriever")
        self.user_id = user_id
        self.session_id = session_id
        self.k = k
        self.mode = _check_mode(mode)
        check_flag("ChatRecallRetriever", "as_context", as_context)
        check_flag("ChatRecallRetriever", "include_pins", include_pins)
        if as_context and self.mode != "retrieve":
            raise ConfigError(f"as_context=True needs mode='retrieve' (got mode={mode!r}): 'search' ranks memories "
                              "only, with no gate and no context to format")
        self.as_context = as_context
        if history is not None and self.mode != "retrieve":
            raise ConfigError(f"history= needs mode='retrieve' (got mode={mode!r}): 'search' has no context to keep "
                              "it out of")
        if history is not None and not isinstance(history, ChatRecallMemory):
            raise ConfigError(f"history={type(history).__name__} is invalid: pass the ChatRecallMemory whose history "
                              "the engine sends (its shown messages are left out of the context), or None")
        self.history = history
        self.strategy = strategy
        self.include_pins = include_pins
        self.budget_tokens = budget_tokens
        self._last: RetrievalResult | None = None
        self._context: str | None = None

    @property
    def last_result(self) -> RetrievalResult | None:
        """The result of this retriever's latest ``retrieve``-mode call (None before the first, and in
        ``search`` mode): ``last_result.explain()`` says what was decided and why. Its ``context`` also holds
        the recent window, which the chat engine sends as history instead: log :attr:`last_context`."""
        return self._last

    @property
    def last_context(self) -> str | None:
        """With ``as_context=True``: the text of the node the latest ``retrieve`` returned, the block the chat
        engine puts in the prompt ("" when the turn needed nothing); None before the first call and without
        ``as_context`` (each node's text is then the engine's to format)."""
        return self._context

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        if self.mode == "search":
            items = self.engine.search(
                query, user_id=self.user_id, k=self.k, strategy=self.strategy, session_id=self.session_id
            )
            return [item_to_node(it) for it in items]
        result = self.engine.retrieve(
            query,
            user_id=self.user_id,
            session_id=self.session_id,
            k=self.k,
            strategy=self.strategy,
            budget_tokens=self.budget_tokens,
            # what the chat history already shows is not searched for again (k is filled from the rest)
            exclude_ids=self.history.shown_ids if self.history is not None else (),
        )
        self._last = result
        if self.as_context:
            node = result_to_context_node(result, include_pins=self.include_pins)
            self._context = node.node.get_content()
            return [node]
        return result_to_nodes(result, include_pins=self.include_pins)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # On the engine's bounded async pool: the event loop is never blocked.
        return await self.engine._arun(self._retrieve, query_bundle)


# ====================================================================== memory block (new Memory class)
class ChatRecallMemoryBlock(BaseMemoryBlock[str]):
    """A block for LlamaIndex's ``Memory``: long-term recall through chatrecall.

    ``Memory`` keeps recent messages in its FIFO; messages it flushes out are
    stored in chatrecall (user and assistant text by default). On every
    ``Memory.get`` the block runs :meth:`ChatRecall.retrieve` for the latest
    user message and returns its context block: the user's pins, the recent
    window of flushed turns, and - when the gate asks for it - the relevant
    memories and corpus passages, within the token budget.

    Example:
        >>> from llama_index.core.memory import Memory
        >>> from chatrecall.testing import fake_engine
        >>> block = ChatRecallMemoryBlock(engine=fake_engine(), user_id="u1")
        >>> memory = Memory.from_defaults(session_id="s1", memory_blocks=[block])

    Attributes:
        engine: The chatrecall engine.
        user_id: Whose memories are written and read.
        session_id: chatrecall session; default: the ``Memory``'s ``session_id``.
        k: Memories ranked per recall (default: the engine's ``top_k``).
        budget_tokens: Override the engine's token budget.
        store_roles: Roles of flushed messages that are stored.
        last_result: The last :class:`RetrievalResult` (for explanations).
    """

    name: str = Field(default="chatrecall", description="The name/identifier of the memory block.")
    description: str | None = Field(default="Pins and recalled memories from chatrecall.")
    engine: Any = Field(exclude=True, description="The chatrecall engine (a ChatRecall).")
    user_id: str
    session_id: str | None = None
    k: int | None = None
    budget_tokens: int | None = None
    store_roles: tuple[str, ...] = _DEFAULT_ROLES
    _last: RetrievalResult | None = PrivateAttr(default=None)

    def __init__(self, engine: Any = UNSET, /, **data: Any) -> None:
        data = with_engine(engine, data, "ChatRecallMemoryBlock")
        check_fields(type(self), data)
        super().__init__(**data)
        check_engine(self.engine, "ChatRecallMemoryBlock")  # after pydantic, so the caller gets our ConfigError, not a ValidationError

    @property
    def last_result(self) -> RetrievalResult | None:
        return self._last

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        session = self.session_id or block_kwargs.get("session_id")
        query = _last_user_text(messages)
        if not query:
            pins = await self.engine.apins(self.user_id, session, cached_if_unavailable=True)  # as retrieve does
            return format_context(pins, (), ())
        result = await self.engine.aretrieve(
            query,
            user_id=self.user_id,
            session_id=session,
            k=self.k,
            budget_tokens=self.budget_tokens,
        )
        self._last = result
        return result.context

    async def _aput(self, messages: list[ChatMessage]) -> None:
        turns = []
        for m in messages:
            text = _message_text(m)
            role = _role(m)
            if role not in self.store_roles or not text.strip():
                continue
            session = self.session_id or m.additional_kwargs.get("session_id") or "default"
            turns.append(Turn(text=text, user_id=self.user_id, session_id=str(session), role=role))
        if turns:
            await self.engine.aadd_many(turns, defer_if_unavailable=True)  # kept in the process if the store is down


# ====================================================================== BaseMemory (chat engines, agents)
class ChatRecallMemory(BaseMemory):
    """Chat memory for LlamaIndex chat engines and agents, backed by chatrecall.

    ``put`` keeps the exact message (tool calls included) in the session's
    history and stores user/assistant text in chatrecall. ``get`` returns a
    system message with the user's pins and what chatrecall recalls for the
    latest user message (gated: small talk recalls nothing; budgeted;
    the stored turns the returned history shows are left out of the search,
    except a change the user told in this conversation, which the engine puts
    just above the older memory it changes), followed by the most recent
    history within ``token_limit``.

    ``SimpleChatEngine`` and agents ``put`` the user's message, then ``get``:
    a recalling memory stores that message once ``get`` has recalled for it
    (or at the next ``put``), so the recall sees the conversation as it was
    before the message, as :meth:`ChatRecall.retrieve` expects and as the
    ``CondensePlusContextChatEngine`` recipe (which retrieves before its
    ``put``) gives it. A message chatrecall would refuse still fails at ``put``.

    Example:
        >>> from llama_index.core.chat_engine import SimpleChatEngine
        >>> from llama_index.core.llms import MockLLM
        >>> from chatrecall.testing import fake_engine
        >>> memory = ChatRecallMemory.from_defaults(engine=fake_engine(), user_id="u1", session_id="s1")
        >>> chat = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
        >>> _ = chat.chat("We use Postgres for billing")

    Attributes:
        engine: The chatrecall engine.
        user_id: Whose memories are written and read.
        session_id: The conversation.
        token_limit: Token cap of the history returned by ``get`` (counted
            with the engine's token counter; the last message is always kept).
        k: Memories ranked per recall (default: the engine's ``top_k``).
        budget_tokens: Override the engine's token budget of pins + recall.
        store_roles: Roles whose text is stored in chatrecall.
        insert: ``system`` (default): pins and recall go in a system message
            before the history; ``user``: they are prepended to (a copy of)
            the latest user message. Use ``user`` with ``ReActAgent``, which
            replaces a leading system message with its own prompt.
        recall: ``True`` (default): ``get`` adds pins and recall. ``False``:
            ``get`` returns the history only, for an engine that retrieves
            on its own: with ``CondensePlusContextChatEngine`` and a
            :class:`ChatRecallRetriever` (which brings pins and recall), a
            recalling memory would put both into the prompt twice.
        last_result: The last :class:`RetrievalResult` (for explanations).

    Example with an engine that has its own retriever::

        history = ChatRecallMemory.from_defaults(engine=cr, user_id="u1", session_id="s1", recall=False)
        chat = CondensePlusContextChatEngine.from_defaults(
            retriever=ChatRecallRetriever(cr, user_id="u1", session_id="s1", as_context=True, history=history),
            memory=history, llm=llm)

    ``shown_ids`` are the stored messages the latest ``get`` returned as history (that retriever leaves them out).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Any = Field(exclude=True, description="The chatrecall engine (a ChatRecall).")
    user_id: str
    session_id: str
    token_limit: int = 3000
    k: int | None = None
    budget_tokens: int | None = None
    store_roles: tuple[str, ...] = _DEFAULT_ROLES
    insert: str = "system"
    recall: bool = True
    _messages: list[ChatMessage] = PrivateAttr(default_factory=list)
    _ids: list[str | None] = PrivateAttr(default_factory=list)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)
    _last: RetrievalResult | None = PrivateAttr(default=None)
    _cache_key: tuple[str, int] | None = PrivateAttr(default=None)
    _injected: tuple[ScoredItem, ...] = PrivateAttr(default=())
    _shown: frozenset[str] = PrivateAttr(default=frozenset())
    #: The ids passed as ``exclude_ids`` to the recall ``_last`` holds: what the engine knew the history showed.
    _told: frozenset[str] = PrivateAttr(default=frozenset())
    #: Index in the history of a user message put and not stored yet: it is stored after the recall for it.
    _pending: int | None = PrivateAttr(default=None)

    def __init__(self, engine: Any = UNSET, /, **data: Any) -> None:
        data = with_engine(engine, data, "ChatRecallMemory")
        check_fields(type(self), data)
        # Ids are checked before pydantic, so the caller gets our InvalidInputError, not a ValidationError.
        engine = check_engine(data.get("engine"), "ChatRecallMemory")
        for name in ("user_id", "session_id"):
            check_id(name, data.get(name), engine.limits)
        if "recall" in data:
            check_flag("ChatRecallMemory", "recall", data["recall"])
        super().__init__(**data)
        if not isinstance(self.token_limit, int) or self.token_limit < 1:
            raise ConfigError(f"token_limit={self.token_limit!r} is invalid: must be an int >= 1")
        if self.insert not in ("system", "user"):
            raise ConfigError(f"insert={self.insert!r} is invalid: use 'system' or 'user'")

    @classmethod
    def class_name(cls) -> str:
        return "ChatRecallMemory"

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        first: Any = UNSET,
        /,
        *,
        engine: ChatRecall | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        chat_history: Sequence[ChatMessage] | None = None,
        **kwargs: Any,
    ) -> ChatRecallMemory:
        """Build the memory; ``chat_history`` seeds the session (and is stored). The engine may come first
        (``from_defaults(cr, user_id=..., session_id=...)``), as the constructor takes it.

        Raises:
            ConfigError: ``engine``, ``user_id`` or ``session_id`` is missing, or the engine is passed twice.
        """
        if first is not UNSET:
            engine = with_engine(first, {} if engine is None else {"engine": engine}, "ChatRecallMemory")["engine"]
        check_fields(cls, kwargs)
        for name, value in (("engine", engine), ("user_id", user_id), ("session_id", session_id)):
            if value is None:
                raise ConfigError(f"{name}=None is invalid: ChatRecallMemory.from_defaults needs {name}")
        memory = cls(engine=engine, user_id=user_id, session_id=session_id, **kwargs)
        if chat_history:
            memory.set(list(chat_history))
        return memory

    @property
    def last_result(self) -> RetrievalResult | None:
        """The engine's result for the latest user turn (its ``explain()`` lists every item it found)."""
        return self._last

    @property
    def shown_ids(self) -> frozenset[str]:
        """Record ids of the stored messages the latest :meth:`get` returned as history: a retriever given this
        memory (``ChatRecallRetriever(history=...)``) leaves them out, so nothing reaches the prompt twice."""
        return self._shown

    @property
    def last_injected(self) -> tuple[ScoredItem, ...]:
        """The items the latest :meth:`get` put in the prompt: ``last_result.items``. They leave out the turns the
        returned history shows (the engine is given them as ``exclude_ids``) except a change told in this
        conversation, placed above the older memory it changes (its ``why`` says "said in this conversation"); nor
        is an item the new user message repeats word for word (stored after the recall, it is in the history)."""
        return self._injected

    # ------------------------------------------------------------------ write
    def _store(self, message: ChatMessage) -> str | None:
        text = _message_text(message)
        role = _role(message)
        if role not in self.store_roles or not text.strip():
            return None
        # a chat engine puts the user's message before calling the LLM: a store outage must not fail the turn
        return self.engine.add(text, user_id=self.user_id, session_id=self.session_id, role=role,
                               defer_if_unavailable=True)

    def _defers(self, message: ChatMessage) -> bool:
        """Whether ``put`` leaves storing ``message`` to the recall for it: a user message a recalling memory
        would store."""
        role = _role(message)
        return (self.recall and role == MessageRole.USER.value and role in self.store_roles
                and bool(_message_text(message).strip()))

    def _flush(self, *, shown: bool = False) -> None:
        """Store the user message put and not stored yet (the caller holds the lock); ``shown``: the ``get`` storing
        it returned it as history. If the store refuses it, it leaves the history too (the history keeps only
        stored messages) and the error is raised."""
        i, self._pending = self._pending, None
        if i is None:
            return
        try:
            rid = self._store(self._messages[i])
        except BaseException:
            del self._messages[i], self._ids[i]
            raise
        self._ids[i] = rid
        if rid is not None and shown:
            self._shown = self._shown | {rid}

    def put(self, message: ChatMessage) -> None:
        """Append ``message`` to the history and store its text in chatrecall (a user message on a recalling
        memory: once the next ``get`` has recalled for it, or at the next ``put``).

        Raises:
            InvalidInputError: chatrecall would refuse the message's text (too long, ...); it is not kept.
        """
        with self._lock:
            self._flush()
            if self._defers(message):
                # SimpleChatEngine puts, then gets: stored now, the message would be in the recent window of
                # its own recall (one of the turns its corpus query reads), unlike the retriever recipe's
                check_text("text", _message_text(message), self.engine.limits)
                self._messages.append(message)
                self._ids.append(None)
                self._pending = len(self._messages) - 1
                return
            rid = self._store(message)
            self._messages.append(message)
            self._ids.append(rid)

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the history (stored text is kept: chatrecall deduplicates by content)."""
        with self._lock:
            ids = [self._store(m) for m in messages]
            self._messages = list(messages)
            self._ids = ids
            self._cache_key, self._pending = None, None

    def reset(self) -> None:
        """Clear the history and forget the session in chatrecall (memories and session pins)."""
        with self._lock:
            self._messages, self._ids, self._pending = [], [], None
            self._cache_key, self._last, self._injected = None, None, ()
            with contextlib.suppress(NotFoundError):  # nothing stored yet: already forgotten
                self.engine.forget(self.user_id, self.session_id)

    async def aput(self, message: ChatMessage) -> None:
        """Async :meth:`put`, on the engine's bounded async pool."""
        await self.engine._arun(self.put, message)

    async def aget(self, input: str | ChatMessage | None = None, **kwargs: Any) -> list[ChatMessage]:  # noqa: A002
        """Async :meth:`get`, on the engine's bounded async pool."""
        return await self.engine._arun(self.get, input, **kwargs)

    # ------------------------------------------------------------------ read
    def get_all(self) -> list[ChatMessage]:
        """The whole history of the session, as put."""
        with self._lock:
            return list(self._messages)

    def _window(self, initial_token_count: int) -> int:
        """Start index of the newest history that fits ``token_limit``.

        The window never starts on an assistant or tool message: a tool
        result without its call (or a reply without its question) confuses
        LLM APIs, so those are dropped with the message before them.
        """
        msgs = self._messages
        limit = self.token_limit - max(int(initial_token_count), 0)
        count = self.engine.token_counter.count
        start, used = len(msgs), 0
        while start > 0:
            cost = count(_message_text(msgs[start - 1]))
            if start < len(msgs) and used + cost > limit:
                break
            used += cost
            start -= 1
        while start < len(msgs) - 1 and _role(msgs[start]) in (MessageRole.ASSISTANT.value, MessageRole.TOOL.value):
            start += 1
        return start

    def get(self, input: str | ChatMessage | None = None, **kwargs: Any) -> list[ChatMessage]:  # noqa: A002
        """A system message with pins + recall (when any), then the recent history.

        Args:
            input: The new user message when the caller has not ``put`` it yet
                (``CondensePlusContextChatEngine``, agents); otherwise the
                latest user message in the history is the query.
            initial_token_count: Tokens the caller already spends (prefix
                messages); taken off ``token_limit``.
        """
        with self._lock:
            start = self._window(kwargs.get("initial_token_count", 0))
            history = self._messages[start:]
            visible = {i for i in self._ids[start:] if i is not None}
            self._shown = frozenset(visible)
            if not self.recall:
                self._flush(shown=True)
                return list(history)
            query = _message_text(input) if input is not None else _last_user_text(self._messages)
            n_user = sum(1 for m in self._messages if _role(m) == MessageRole.USER.value)
            key = (query, n_user)
            if query.strip() and (self._last is None or self._cache_key != key):
                # An agent calls get() once per tool step: recall once per user turn. What the history shows is
                # left out of the search (k is filled from the rest), as ChatRecallRetriever(history=...) does.
                self._last = self.engine.retrieve(
                    query, user_id=self.user_id, session_id=self.session_id, k=self.k,
                    budget_tokens=self.budget_tokens, exclude_ids=visible,
                )
                self._cache_key, self._told = key, frozenset(visible)
            self._flush(shown=True)  # the message recalled for is stored now (retrieve: "store it once answered")
            if query.strip() and self._last is not None:
                pins: Sequence[Pin] = self._last.pins
                # The engine was told what the history shows (exclude_ids): what it returns of that is deliberate
                # (a change said in this conversation, placed above the memory it changes; nu52). A turn shown
                # only since (the message just stored, which may repeat an older turn) is not repeated.
                items = [it for it in self._last.items if it.id in self._told or it.id not in self._shown]
            else:
                pins, items = self.engine.pins(self.user_id, self.session_id, cached_if_unavailable=True), []
            self._injected = tuple(items)
        context = format_context(pins, (), items, now=self._last.at if self._last is not None else None)
        if not context:
            return history
        if self.insert == "system":
            return [ChatMessage(role=MessageRole.SYSTEM, content=context), *history]
        for i in range(len(history) - 1, -1, -1):
            m = history[i]
            if _role(m) == MessageRole.USER.value:
                # A copy: the stored message must stay as the user wrote it.
                merged = ChatMessage(role=m.role, blocks=[TextBlock(text=context + "\n\n"), *m.blocks],
                                     additional_kwargs=dict(m.additional_kwargs))
                return [*history[:i], merged, *history[i + 1:]]
        return [*history, ChatMessage(role=MessageRole.USER, content=context)]


# ====================================================================== embeddings
class ChatRecallEmbedding(BaseEmbedding):
    """A chatrecall :class:`Embedder` (e.g. the bundled MiniLM) as a LlamaIndex embedding model.

    Example:
        >>> from chatrecall.testing import HashEmbedder
        >>> emb = ChatRecallEmbedding(embedder=HashEmbedder(dim=32))
        >>> len(emb.get_query_embedding("hello"))
        32
    """

    embedder: Any = Field(exclude=True, description="A chatrecall Embedder.")

    def __init__(self, **data: Any) -> None:
        check_fields(type(self), data)
        super().__init__(**data)
        if not isinstance(self.embedder, Embedder):
            raise ConfigError(f"embedder={self.embedder!r} is invalid: pass a chatrecall Embedder")
        if self.model_name == "unknown":
            self.model_name = f"chatrecall:{type(self.embedder).__name__}"

    @classmethod
    def class_name(cls) -> str:
        return "ChatRecallEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in np.asarray(self.embedder.embed_query(query)).tolist()]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return np.asarray(self.embedder.embed_documents(texts), dtype=np.float32).tolist()  # type: ignore[no-any-return]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)


class LlamaIndexEmbedder:
    """A LlamaIndex embedding model as a chatrecall :class:`Embedder` (rows L2-normalised).

    Example:
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> LlamaIndexEmbedder(MockEmbedding(embed_dim=8)).dim
        8
    """

    def __init__(self, embedding: BaseEmbedding) -> None:
        if not isinstance(embedding, BaseEmbedding):
            raise ConfigError(f"embedding={embedding!r} is invalid: pass a LlamaIndex BaseEmbedding")
        self.embedding = embedding
        self._dim: int | None = None

    @staticmethod
    def _unit(mat: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(mat, axis=-1, keepdims=True)
        return (mat / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed_query("dimension probe").shape[0])
        return self._dim

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._unit(np.asarray(self.embedding.get_text_embedding_batch(list(texts)), dtype=np.float32))

    def embed_query(self, text: str) -> np.ndarray:
        vec = self._unit(np.asarray(self.embedding.get_query_embedding(text), dtype=np.float32))
        self._dim = int(vec.shape[0])
        return vec


# ====================================================================== node postprocessor
def _timestamp(node: BaseNode, key: str) -> float | None:
    value = node.metadata.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInputError(
                f"node {node.node_id!r}: metadata[{key!r}]={value!r} is not an ISO date or unix time"
            ) from None
    if isinstance(value, _dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)).timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise InvalidInputError(f"node {node.node_id!r}: metadata[{key!r}]={value!r} is not a timestamp")


class ChatRecallPostprocessor(BaseNodePostprocessor):
    """Re-rank nodes from any retriever with chatrecall's hybrid score, diversity and budget.

    Each node is scored on relevance (cosine via ``embedder``, else the
    upstream score), BM25 keyword evidence over the retrieved set, entity
    overlap with the query and, when nodes carry ``metadata[timestamp_key]``,
    recency; then near-duplicates are dropped and the rest cut to
    ``top_n`` and ``budget_tokens`` (see :func:`chatrecall.core.rerank`).
    Returned nodes are copies with the new score and
    ``metadata["chatrecall"]`` (components, why, upstream score), hidden
    from the LLM prompt.

    Example:
        >>> from llama_index.core.schema import NodeWithScore, TextNode
        >>> pp = ChatRecallPostprocessor(top_n=1)
        >>> nodes = [NodeWithScore(node=TextNode(id_="a", text="cats purr"), score=0.9),
        ...          NodeWithScore(node=TextNode(id_="b", text="Postgres stores billing data"), score=0.8)]
        >>> [n.node.node_id for n in pp.postprocess_nodes(nodes, query_str="where is billing data stored?")]
        ['b']

    Attributes:
        embedder: A chatrecall ``Embedder`` or a LlamaIndex ``BaseEmbedding``
            (enables cosine relevance); None uses the upstream score.
        weights: Hybrid weights per component (default: chatrecall's).
        top_n: Keep at most this many nodes.
        budget_tokens: Keep at most this many tokens of node text.
        diversity_threshold: Word-set Jaccard similarity at which a node is
            a near-duplicate of a better one.
        half_life_s: Recency half-life.
        timestamp_key: Metadata key holding a unix time, datetime or ISO date.
        token_counter: Anything ``as_token_counter`` accepts (tiktoken encoding, ...).
        extractor: A chatrecall ``EntityExtractor`` (default: the regex one).
        clock: What "now" is for recency: a callable returning epoch seconds,
            e.g. the ``ManualClock`` your engine was built with (default: the
            system clock).
    """

    embedder: Any = Field(default=None, exclude=True)
    weights: dict[str, float] | None = None
    top_n: int | None = None
    budget_tokens: int | None = None
    diversity_threshold: float = 0.8
    half_life_s: float = 7 * 24 * 3600.0
    timestamp_key: str = "timestamp"
    token_counter: Any = Field(default=None, exclude=True)
    extractor: Any = Field(default=None, exclude=True)
    clock: Any = Field(default=None, exclude=True)
    _embedder: Embedder | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        check_fields(type(self), data)
        super().__init__(**data)
        emb = self.embedder
        if isinstance(emb, BaseEmbedding):
            emb = LlamaIndexEmbedder(emb)
        elif emb is not None and not isinstance(emb, Embedder):
            raise ConfigError(f"embedder={emb!r} is invalid: pass a chatrecall Embedder or a LlamaIndex BaseEmbedding")
        self._embedder = emb
        if self.clock is not None and not callable(self.clock):
            raise ConfigError(f"clock={self.clock!r} is invalid: pass a callable returning epoch seconds (time.time)")
        if self.extractor is None:
            from chatrecall.core import RegexEntityExtractor

            self.extractor = RegexEntityExtractor()
        # Validate every setting now (the core names the bad value) rather than on the first query.
        self._rerank("probe", [])

    @classmethod
    def class_name(cls) -> str:
        return "ChatRecallPostprocessor"

    def _rerank(self, query: str, candidates: Sequence[Candidate]) -> list[ScoredItem]:
        return rerank(
            query,
            candidates,
            embedder=self._embedder,
            weights=self.weights,
            extractor=self.extractor,
            token_counter=self.token_counter,
            budget_tokens=self.budget_tokens,
            top_n=self.top_n,
            diversity_threshold=self.diversity_threshold,
            half_life_s=self.half_life_s,
            now=None if self.clock is None else float(self.clock()),
        )

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise InvalidInputError("ChatRecallPostprocessor needs the query: pass query_bundle or query_str")
        if not nodes:
            return []
        by_id: dict[str, NodeWithScore] = {}
        candidates = []
        for nws in nodes:
            node = nws.node
            if node.node_id in by_id:
                continue
            by_id[node.node_id] = nws
            candidates.append(
                Candidate(
                    id=node.node_id,
                    text=node.get_content(metadata_mode=MetadataMode.NONE),
                    score=nws.score,
                    timestamp=_timestamp(node, self.timestamp_key),
                )
            )
        out = []
        for item in self._rerank(query_bundle.query_str, candidates):
            src = by_id[item.id]
            info: Mapping[str, Any] = {
                "score": item.score,
                "components": dict(item.components),
                "why": item.why,
                "upstream_score": src.score,
                "tokens": item.tokens,
            }
            node = src.node.model_copy(
                update={
                    "metadata": {**src.node.metadata, _RERANK_KEY: info},
                    "excluded_llm_metadata_keys": [*src.node.excluded_llm_metadata_keys, _RERANK_KEY],
                    "excluded_embed_metadata_keys": [*src.node.excluded_embed_metadata_keys, _RERANK_KEY],
                }
            )
            out.append(NodeWithScore(node=node, score=item.score))
        return out
