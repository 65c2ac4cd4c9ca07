"""The chatrecall engine: write path, gate, two-phase hybrid retrieval, budget, pins."""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import dataclasses
import functools
import hashlib
import itertools
import logging
import threading
import time
import warnings
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from ._aio import _AsyncMixin
from ._answer_form_table import FORM_QUESTION_WORDS as _FORM_QUESTION_WORDS
from ._answer_form_table import FORM_WORDS as _FORM_WORDS
from ._answer_forms import asked_form, holds_form
from ._budget import budget_for, select_items, tier_of, trim_overlaps
from ._classifier import (
    asked_for,
    asks_advice,
    asks_other,
    drop_negated,
    names_in,
    names_own,
    other_than,
    refers_back,
    ruled_out,
)
from ._config import BudgetConfig, PinConfig, RetrievalConfig, StoreLimits, as_config
from ._entities import RegexEntityExtractor
from ._errors import (
    ClosedError,
    ConfigError,
    InvalidInputError,
    NotFoundError,
    PinLimitError,
    StoreError,
    StoreUnavailableError,
)
from ._format import chunk_text, format_context
from ._gate import Gate, GateConfig, asks_or_requests
from ._gate_model import feature_label
from ._index import PARTS_KEY, UserIndex, encode_parts, overlapping_keys, sentence_parts, tokenize, without_parts
from ._metrics import Metrics
from ._protocols import Embedder, EntityExtractor, MemoryStore, TokenCounter, VectorIndexFactory
from ._ranking import rank_memories, topk
from ._snapshot import SnapshotCache
from ._tokens import as_token_counter, truncate_to_tokens
from ._types import (
    COLLECTION_CORPUS,
    COLLECTION_MEMORIES,
    COLLECTION_PINS,
    SHARED_OWNER,
    Entity,
    ForgetReport,
    GateDecision,
    Pin,
    QueryType,
    Record,
    RetrievalResult,
    Route,
    ScoredItem,
    Strategy,
    Turn,
)
from ._validate import (
    check_bool,
    check_chunking,
    check_document_fields,
    check_id,
    check_ids,
    check_k,
    check_metadata,
    check_strategy,
    check_text,
    check_timestamp,
    check_turn,
    document_item_error,
    framework_document,
    keywords_checked,
)

__all__ = ["ChatRecall"]

_ANCHOR_KINDS = frozenset({"identifier", "path", "error", "quoted", "name"})
#: The words that only name the asked form, as BM25 terms (``_answer_form_table.FORM_QUESTION_WORDS``).
_FORM_TERMS = frozenset(t for w in _FORM_QUESTION_WORDS for t in tokenize(w))
#: Gate categories whose signal means a turn continues the previous one (a pending correction applies).
_CONTINUING = frozenset({"continuity", "explicit", "recall", "temporal", "correction"})
_MEMORY_SIGNS = _CONTINUING | {"personal"}  # categories whose patterns speak of the user (named in notes)
#: Store queries slower than this (ms, moving average over at least _FRESH_MIN_PROBES
#: searches) stop being asked on every search.
_FRESH_MS = 2.0
_FRESH_MIN_PROBES = 3
#: Shared store: least seconds between two re-reads of one user's ids (see _probe_shared).
_RESYNC_S = 1.0


_log = logging.getLogger("chatrecall")


@functools.lru_cache(maxsize=1024)
def _word_pairs(text: str) -> frozenset[tuple[str, str]]:
    """The pairs of words next to each other in ``text`` (index terms, stop words and numbers aside), cached: a
    message is read once for every passage title it is compared with, and a title once for every message."""
    words = [t for t in tokenize(text) if t.isalpha()]
    return frozenset(zip(words, words[1:]))


def _hash_id(*parts: str) -> str:
    h = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return h[:32]


@dataclasses.dataclass
class _UserState:
    index: UserIndex
    lock: threading.RLock = dataclasses.field(default_factory=threading.RLock)
    pins: list[Pin] | None = None
    pins_loaded_at: float = 0.0
    synced_at: float = 0.0
    correction_pending: set[str] = dataclasses.field(default_factory=set)
    #: Sessions whose last turn brought documents (a follow-up right after one searches the corpus too), each with
    #: whether the documents answered it (a strong passage, or passages alone: a correction searches them again, C52).
    corpus_last: dict[str, bool] = dataclasses.field(default_factory=dict)
    #: Sessions whose last turn was given passages: their documents' ids, best first (a correction asking for "the other
    #: one" leaves them out), whether the documents answered the turn or came with its memories.
    corpus_docs: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    #: Why the cached index is being served without the store (None while the store answers).
    degraded: str | None = None
    #: Shared store: memories-collection count at this user's last resync (None: never), and its time.
    seen_total: int | None = None
    resynced_at: float = float("-inf")


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class _Pending:
    """A turn kept in the process because the store was unavailable (``add(..., defer_if_unavailable=True)``):
    written as built, so a retry stores the same record under the same id."""

    record: Record  # as the index keeps it
    stored: Record  # as the store keeps it (sentence vectors in its metadata)
    vector: np.ndarray
    parts: np.ndarray | None


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    """The route decided once per retrieve (see ``ChatRecall._plan_route``)."""

    route: Route
    two_phase: bool
    fallback: bool
    correction: bool = False  # a correction's memory is kept even when it looks weak
    probe: bool = False  # a corpus-only turn: the memory fallback's lookup runs first
    #: A continuity pattern fired ("and where is it held?"): the session's recent user turns say what the message
    #: is about, so they inform its corpus query (:meth:`ChatRecall._corpus_query`) on any route.
    follows_up: bool = False
    #: The names memory knows that alone widened a corpus question to both ("how do I say 'good morning' in
    #: Portuguese?" from a user learning Portuguese): only memories naming one are kept (criterion C28).
    known_names: tuple[str, ...] = ()


#: Gate categories whose matched words stay content words in :meth:`ChatRecall._content_terms`: the personal
#: patterns' ("my cat") always; for the corpus probe's lacked-word rule the continuity patterns' too, which name
#: the thing ("the deposit?" in "what the quote said about the deposit?"; criterion C25).
_PERSONAL = frozenset({"personal"})
_NAMING_CATEGORIES = frozenset({"personal", "continuity"})
#: Seconds after which an empty corpus is counted again (:meth:`ChatRecall._corpus_size`): at most one count a second
#: while there are no documents, none once there are (operational, not tuned).
_EMPTY_CORPUS_RECOUNT_S = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class _Search:
    items: tuple[ScoredItem, ...]
    rejected: tuple[ScoredItem, ...]
    strategy: Strategy
    query_type: QueryType
    #: Turns left out because they repeat a pin shown with the result (``pins=`` of the search).
    repeating_pins: int = 0


@dataclasses.dataclass(eq=False)
class _Run:
    """Working state of one retrieve, passed from step to step."""

    message: str
    user_id: str
    session_id: str | None
    k: int
    explicit_k: bool
    strategy: Strategy | None
    t_start: float
    #: The engine's clock, read once per call: recency, "last week" and the context's "now" are all read from it.
    now: float
    #: What is searched for: the message, without the part a correction rules out ("..., not staging").
    query: str = ""
    #: The names a follow-up's memory search adds ("Okafor" for "and what's the venue for that one?"), or "";
    #: the memory search's query, vector and entities with them (:meth:`ChatRecall._follow_up_names`).
    follow_names: str = ""
    follow_note: str = ""  # what the explanation says of them, once memory is searched with them
    follow_search: tuple[str, Any, list[Entity]] | None = None
    #: What a correction rules out and what it asks for (index terms): its "not X" part (``ruled_out``), or the
    #: names of the question it corrects when it asks for "the other ..." (``other_than``).
    ruled: frozenset[str] = frozenset()
    kept: frozenset[str] = frozenset()
    #: A message asking for "the other one" right after an answer: that answer (the session's last assistant turn),
    #: and the stored turns it drew on, which the memory search leaves out (:meth:`ChatRecall._answer_source`).
    other_reply: Record | None = None
    answer_source: frozenset[str] | None = None
    source_vec: np.ndarray | None = None
    st: _UserState | None = None
    store_down: bool = False
    pins: list[Pin] = dataclasses.field(default_factory=list)
    recent: tuple[ScoredItem, ...] = ()
    inject_recent: bool = True
    #: Record ids the caller's own history shows (``retrieve(exclude_ids=...)``): left out of the memory search.
    shown: frozenset[str] = frozenset()
    #: ``retrieve(as_of=...)``: turns stored and pins made after it are neither searched nor shown (None: all).
    as_of: float | None = None
    entities: list[Entity] = dataclasses.field(default_factory=list)
    qvec: np.ndarray | None = None
    search: _Search | None = None
    memory_items: list[ScoredItem] = dataclasses.field(default_factory=list)
    phase1: list[ScoredItem] = dataclasses.field(default_factory=list)
    #: The small lookup of a memory-only turn did not answer (nothing useful, or no memory at all outside the
    #: recent window): the corpus is tried, and :meth:`ChatRecall._settle_phase1` decides what stays.
    memory_short: bool = False
    #: A memory-only turn whose small lookup was useful searches the documents too: for the answer form those
    #: memories lack (``form_gap``), or for a strong passage (``RetrievalConfig.corpus_probe``); see
    #: :meth:`ChatRecall._settle_corpus_probe`.
    corpus_probe: bool = False
    #: The answer form the message asks for ("time", "hours", "price", "when"; ``_answer_forms.asked_form``), read
    #: once by the memory phase of a memory-only plan, and whether its useful memories lack it (``form_gap``).
    form: str | None = None
    form_gap: bool = False
    #: A word of the message that another passage's title holds and nothing informing the corpus query said: the
    #: corpus was queried with the message alone (:meth:`ChatRecall._names_elsewhere`), and a probe keeps that passage.
    named: str | None = None
    corpus_items: list[ScoredItem] = dataclasses.field(default_factory=list)
    rejected: list[ScoredItem] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    timings: dict[str, float] = dataclasses.field(default_factory=dict)

    def is_message(self, item: ScoredItem) -> bool:
        """Whether a turn of the recent window is this message, stored by a caller before asking (LlamaIndex's
        ``put``, then ``get``)."""
        return item.record is not None and item.record.text.strip() == self.message.strip()

    @property
    def probe_only(self) -> bool:
        """The documents were searched only as the probe of a memory turn whose lookup passed (no answer form
        lacking): the memories answer; passages join them, they do not make the turn one the documents answered."""
        return self.corpus_probe and not self.form_gap


_F = TypeVar("_F", bound=Callable[..., Any])


def _open_only(method: _F) -> _F:
    """Decorate a ChatRecall method that needs the store or the background pool: after ``close()`` it raises
    :class:`ClosedError` naming the call (one attribute read on an open engine)."""
    name = method.__name__

    @functools.wraps(method)
    def guarded(self: ChatRecall, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise ClosedError(
                f"ChatRecall.{name}() was called after close(); nothing stored is lost: open a new one on the "
                "same store (chatrecall.connect(...) with the same path or url)")
        return method(self, *args, **kwargs)

    return guarded  # type: ignore[return-value]


def _turn_score(item: ScoredItem) -> float:
    """``item``'s score without what one of its sentences added: what ``useful_score`` is compared with, since it was
    chosen on whole turns' scores (a short sentence matches on a coincidental word more easily)."""
    return item.score - item.sentence_lift


class ChatRecall(_AsyncMixin):
    """Memory layer between a chatbot's user message and its LLM.

    Stores conversation turns, decides per message whether and where to search
    (none / memory / corpus / both), retrieves with a hybrid of recency,
    dense relevance, BM25, entities and graph expansion, and fits the result
    into a token budget with pinned constraints first. No LLM call anywhere.

    Example:
        >>> from chatrecall.testing import HashEmbedder, InMemoryStore
        >>> cr = ChatRecall(store=InMemoryStore(), embedder=HashEmbedder())
        >>> _ = cr.add("We use Postgres for the billing service", user_id="u1", session_id="s1")
        >>> cr.retrieve("Remember which database we use for billing?", user_id="u1").route.value
        'memory'

    Args:
        store: Where records live (``ChromaStore`` in production).
        embedder: Turns text into vectors (``SentenceTransformerEmbedder``).
        token_counter: Anything :func:`as_token_counter` accepts; offline default.
        entity_extractor: Defaults to the regex extractor.
        gate: A :class:`Gate` or :class:`GateConfig`.
        retrieval: Retrieval tuning.
        budget: Token budget.
        pins: Caps on pinned constraints.
        limits: Input limits.
        max_cached_users: Users whose in-process index is kept (LRU); the rest
            is rebuilt from the store on demand.
        sync_interval_s: How often a user's cached index is reconciled with
            the store, to pick up writes of other processes.
        clock: Time source (tests pass a fake clock).
        vector_index: Makes an approximate nearest-neighbour index per large
            user (over ``UserIndex.EXACT_MAX`` memories), whose shortlist the
            engine scores exactly: ``UsearchIndexFactory`` from
            ``chatrecall.adapters.usearch`` (the default of :func:`chatrecall.connect`
            when usearch is installed). None: a built-in sign-bit shortlist.
    """

    #: Most turns per user kept in the process while the store is unavailable (``add(...,
    #: defer_if_unavailable=True)``); past it the oldest are dropped, counted in ``stats()`` as
    #: ``pending_dropped`` and logged as a warning.
    MAX_PENDING_TURNS = 256

    @keywords_checked
    def __init__(
        self,
        *,
        store: MemoryStore,
        embedder: Embedder,
        token_counter: Any = None,
        entity_extractor: EntityExtractor | None = None,
        gate: Gate | GateConfig | Mapping[str, Any] | None = None,
        retrieval: RetrievalConfig | Mapping[str, Any] | None = None,
        budget: BudgetConfig | Mapping[str, Any] | None = None,
        pins: PinConfig | Mapping[str, Any] | None = None,
        limits: StoreLimits | Mapping[str, Any] | None = None,
        max_cached_users: int = 256,
        sync_interval_s: float = 300.0,
        clock: Callable[[], float] = time.time,
        vector_index: VectorIndexFactory | None = None,
    ) -> None:
        # Every argument is checked here, so a mistake fails now, naming the value, not on a later call.
        if store is None or not isinstance(store, MemoryStore):
            raise ConfigError(
                f"store={store!r} is invalid: pass a MemoryStore such as "
                "chatrecall.adapters.chroma.ChromaStore() (chatrecall.connect() builds one for you)"
            )
        if embedder is None or not isinstance(embedder, Embedder):
            raise ConfigError(
                f"embedder={embedder!r} is invalid: pass an Embedder such as "
                "chatrecall.adapters.sentence_transformers.SentenceTransformerEmbedder() (chatrecall.connect() "
                "builds one for you)"
            )
        if isinstance(max_cached_users, bool) or not isinstance(max_cached_users, int) or max_cached_users < 1:
            raise ConfigError(f"max_cached_users={max_cached_users!r} is invalid: must be an int >= 1")
        if (isinstance(sync_interval_s, bool) or not isinstance(sync_interval_s, (int, float))
                or not sync_interval_s > 0 or sync_interval_s != sync_interval_s):
            raise ConfigError(f"sync_interval_s={sync_interval_s!r} is invalid: must be a positive number of seconds")
        if not callable(clock):
            raise ConfigError(f"clock={clock!r} is invalid: must be a callable returning epoch seconds (time.time)")
        if vector_index is not None and not isinstance(vector_index, VectorIndexFactory):
            raise ConfigError(
                f"vector_index={vector_index!r} is invalid: pass a VectorIndexFactory (name, create(dim), "
                "restore(data, dim)) such as chatrecall.adapters.usearch.UsearchIndexFactory(), or None"
            )
        if entity_extractor is not None and not isinstance(entity_extractor, EntityExtractor):
            raise ConfigError(
                f"entity_extractor={entity_extractor!r} is invalid: pass an object with extract(text) "
                "(an EntityExtractor) or None for the built-in RegexEntityExtractor"
            )
        # The gate's config is checked now; the gate itself (0.4 s: regex compiles, the analysis read from the
        # shipped table; a user's own patterns are analysed) is built on
        # first use, so commands that never route a message (stats, pins) do not pay for it.
        self._gate: Gate | None = gate if isinstance(gate, Gate) else None
        self._gate_config = gate.config if isinstance(gate, Gate) else as_config(
            "gate", gate, GateConfig, "GateConfig(memory_threshold=0.6)")
        self._gate_lock = threading.Lock()
        self.store = store
        self.embedder = embedder
        self.token_counter: TokenCounter = as_token_counter(token_counter)
        self.extractor: EntityExtractor = entity_extractor or RegexEntityExtractor()
        self.retrieval_config = as_config("retrieval", retrieval, RetrievalConfig, "RetrievalConfig(top_k=5)")
        self.budget_config = as_config("budget", budget, BudgetConfig, "BudgetConfig(max_tokens=800)")
        self.pin_config = as_config("pins", pins, PinConfig, "PinConfig(max_pins=5)")
        self.limits = as_config("limits", limits, StoreLimits, "StoreLimits(max_text_chars=50_000)")
        self._clock = clock
        self.metrics = Metrics(clock=clock)
        self._max_users = max_cached_users
        self._sync_interval = sync_interval_s
        self._users: OrderedDict[str, _UserState] = OrderedDict()
        self._users_lock = threading.Lock()
        #: Turns the store could not take (``defer_if_unavailable``), per user, oldest first; the lock guards the
        #: dict and its queues (no I/O under it). Written under the user's own lock (:meth:`_write_pending`).
        self._pending: dict[str, deque[_Pending]] = {}
        self._pending_lock = threading.Lock()
        self._closed = False
        #: A store this engine opened for its caller (``chatrecall.connect``), closed by :meth:`close`; a store
        #: passed in belongs to the caller, who closes it.
        self._owned_store: Any = None
        self._pool = cf.ThreadPoolExecutor(max_workers=4, thread_name_prefix="chatrecall-phase1")
        self._corpus_count: int | None = None
        self._corpus_counted_at = 0.0  # time.monotonic() of that count
        self.vector_index = vector_index
        # warm start of large users in a new process (see _snapshot)
        self._snapshots = SnapshotCache(store, ann=vector_index)
        # Freshness probe bookkeeping (see _refresh): probes made, latency EWMA (ms), last probe time.
        self._fresh_n = 0
        self._fresh_ms = 0.0
        self._fresh_at = float("-inf")

    # ================================================================ state
    def _state(self, user_id: str) -> _UserState:
        """The user's cached index, loaded from the store on first use."""
        with self._users_lock:
            st = self._users.get(user_id)
            if st is not None:
                self._users.move_to_end(user_id)
        if st is None:
            fresh = _UserState(UserIndex(self.embedder.dim, ann=self.vector_index))
            with fresh.lock:
                self._load(user_id, fresh)
                self._index_pending(user_id, fresh)  # turns kept while the store was down are served too
                with self._users_lock:
                    st = self._users.setdefault(user_id, fresh)
                    while len(self._users) > self._max_users:
                        self._users.popitem(last=False)
        elif self._clock() - st.synced_at > self._sync_interval:
            with st.lock:
                try:
                    self._load(user_id, st)
                    st.degraded = None
                except StoreError as exc:  # keep serving what is cached; the next call retries
                    st.degraded = f"sync failed: {type(exc).__name__}"
                    self.metrics.incr("degraded")
        return st

    def _cached_state(self, user_id: str) -> _UserState | None:
        """The user's index if this process holds it (no store read), else None."""
        with self._users_lock:
            return self._users.get(user_id)

    def _load(self, user_id: str, st: _UserState) -> None:
        """Bring the index up to date with the store (adds what is missing, drops what is gone).

        A warm index reads records without vectors first and fetches vectors
        only for what it lacks: a periodic sync of a large user moves text,
        not 1.5 KB per memory.
        """
        warm = len(st.index) > 0
        snap = None if warm else self._snapshots.restore(user_id, COLLECTION_MEMORIES, self.embedder.dim)
        if snap is not None:
            st.index, st.synced_at = snap, self._clock()
            return
        version = self._snapshots.begin_sync(user_id)  # unchanged after the read: the index equals the store
        ids_only = getattr(self.store, "ids", None) if warm else None
        if callable(ids_only):  # a warm sync needs the ids only (a memory's metadata holds its sentence vectors)
            listed = list(ids_only(COLLECTION_MEMORIES, {"user_id": user_id}))
            batch = None
        else:
            batch = self.store.get(COLLECTION_MEMORIES, where={"user_id": user_id}, include_embeddings=not warm)
            listed = [r.id for r in batch.records]
        stored = set(listed) | self._pending_ids(user_id)  # a turn waiting to be written is not gone
        gone = [rid for rid in st.index.pos if rid not in stored]
        if gone:
            st.index.remove(gone)
        missing = [rid for rid in listed if rid not in st.index]
        if warm and (gone or missing):
            self._snapshots.touched(user_id)
        if missing:
            if warm or batch is None:
                batch = self.store.get(COLLECTION_MEMORIES, ids=missing, include_embeddings=True)
                keep = list(range(len(batch.records)))
            else:
                keep = [i for i, r in enumerate(batch.records) if r.id not in st.index]
            if batch.embeddings is not None and keep:
                st.index.add([batch.records[i] for i in keep], batch.embeddings[keep])
        self._snapshots.end_sync(user_id, version)
        st.synced_at = self._clock()
        if not warm:
            self._snapshots.save(user_id, st.index)

    def _pull(self, st: _UserState, ids: Sequence[str]) -> None:
        """Add records another process wrote (seen in a store query) to the cache."""
        batch = self.store.get(COLLECTION_MEMORIES, ids=list(ids), include_embeddings=True)
        if batch.records and batch.embeddings is not None:
            with st.lock:
                st.index.add(batch.records, batch.embeddings)
            self._snapshots.touched(batch.records[0].user_id)

    # ================================================================ write path
    def _make_turn(self, t: Turn | Mapping[str, Any]) -> Turn:
        return check_turn(t, self.limits)  # mappings may say ``content`` for ``text``

    @_open_only
    @keywords_checked
    def add(
        self,
        text: str,
        *,
        user_id: str,
        session_id: str,
        role: str = "user",
        timestamp: float | Any = None,
        metadata: Mapping[str, Any] | None = None,
        defer_if_unavailable: bool = False,
    ) -> str:
        """Store one conversation turn; returns its stable id.

        The id is derived from (user, session, text), so storing identical
        text in the same session again returns the existing id and stores
        nothing.

        Args:
            defer_if_unavailable: When the store cannot be reached, keep the
                turn in this process instead of raising (see :meth:`add_many`).

        Raises:
            InvalidInputError: A value is empty, of the wrong type or too long.
            StoreError: The store failed; nothing was added to the index
                (``StoreUnavailableError`` not with ``defer_if_unavailable``).
        """
        return self.add_many(
            [Turn(text=text, user_id=user_id, session_id=session_id, role=role,
                  timestamp=timestamp, metadata=metadata)],  # type: ignore[arg-type]
            defer_if_unavailable=defer_if_unavailable,
        )[0]

    @_open_only
    @keywords_checked
    def add_many(self, turns: Iterable[Turn | Mapping[str, Any]], *, defer_if_unavailable: bool = False) -> list[str]:
        """Store many turns in one embedding batch; returns ids in input order.

        Every turn is validated before anything is written. Turns kept from an
        earlier outage (``defer_if_unavailable``) are written first, in order.

        Args:
            turns: :class:`Turn` objects or mappings (``content`` is accepted
                for ``text``).
            defer_if_unavailable: For a caller that must not fail once its
                answer exists (a chat turn's store step, as the LangChain
                middleware and the LlamaIndex memory do): when the store raises
                :class:`StoreUnavailableError`, the turns are kept in this
                process instead, at most :attr:`MAX_PENDING_TURNS` per user
                (the oldest dropped past it), served by ``retrieve``,
                ``search`` and ``recent`` from the cached index, and written,
                in order and under the same ids, before the next write or
                ``retrieve`` for the user that reaches the store (or by
                :meth:`close`). A process that exits first loses them.
                :meth:`pending_turns` says how many wait; a warning is logged
                (logger ``chatrecall``). Other store errors still raise.

        Raises:
            InvalidInputError: A turn or ``defer_if_unavailable`` is invalid.
            StoreError: The store failed; nothing was added to the index
                (``StoreUnavailableError`` not with ``defer_if_unavailable``).
        """
        if isinstance(turns, (str, bytes, Mapping)) or not isinstance(turns, Iterable):
            raise InvalidInputError(f"turns must be an iterable of turns, got {type(turns).__name__}")
        check_bool("defer_if_unavailable", defer_if_unavailable)
        checked = [self._make_turn(t) for t in turns]
        if not checked:
            return []
        now = self._clock()
        ids = [_hash_id(t.user_id, t.session_id, t.text.strip()) for t in checked]
        by_user: dict[str, list[int]] = {}
        for i, t in enumerate(checked):
            by_user.setdefault(t.user_id, []).append(i)
        for user_id, rows in by_user.items():
            try:
                st = self._state(user_id)
            except StoreUnavailableError as exc:  # an uncached user: its index cannot be loaded
                if not defer_if_unavailable:
                    raise
                self._defer_uncached(user_id, [(ids[i], checked[i]) for i in rows], now, exc)
                continue
            with st.lock:
                seen: set[str] = set()
                todo = []
                for i in rows:
                    if ids[i] in st.index or ids[i] in seen:
                        continue
                    seen.add(ids[i])
                    todo.append(i)
                if not todo:
                    # already indexed (perhaps waiting to be written): a plain call returns once it is stored
                    if self._has_pending(user_id):
                        try:
                            with self._snapshots.writing(user_id):
                                self._write_pending(user_id, st)
                        except StoreUnavailableError:
                            if not defer_if_unavailable:
                                raise
                    continue
                sessions = {checked[i].session_id for i in todo}
                records = self._records([(ids[i], checked[i]) for i in todo], now,
                                        {sid: len(st.index.session_positions(sid)) for sid in sessions})
                t0 = time.perf_counter()
                emb, parts, stored = self._embed_memories(records)
                t1 = time.perf_counter()
                try:
                    with self._snapshots.writing(user_id):  # other processes' snapshots of this user go stale
                        self._write_pending(user_id, st)  # turns kept from an outage go first, in order
                        self.store.upsert(COLLECTION_MEMORIES, stored, emb)
                        t2 = time.perf_counter()
                        st.index.add(records, emb, parts)
                except StoreUnavailableError as exc:
                    if not defer_if_unavailable:
                        raise
                    self._defer(user_id, st, records, stored, emb, parts, exc)
                    continue
                if st.seen_total is not None:  # our own write must not look like another process's
                    st.seen_total += len(records)
                self.metrics.observe("latency_ms.write_embed", (t1 - t0) * 1e3)
                self.metrics.observe("latency_ms.write_store", (t2 - t1) * 1e3)
                self.metrics.incr("memories_stored", len(records))
        return ids

    def _records(self, rows: Sequence[tuple[str, Turn]], now: float, start: Mapping[str, int]) -> list[Record]:
        """The records of validated turns (id, turn): entity keys, each session's turns numbered on from
        ``start[session_id]`` (0 when absent), and the engine's clock where a turn has no timestamp."""
        records = []
        seq_next = dict(start)
        for rid, t in rows:
            seq = seq_next.get(t.session_id, 0)
            seq_next[t.session_id] = seq + 1
            keys = tuple(dict.fromkeys(e.key for e in self.extractor.extract(t.text)))
            records.append(Record(
                id=rid, text=t.text, user_id=t.user_id, session_id=t.session_id, role=t.role,
                timestamp=t.timestamp if t.timestamp is not None else now + seq * 1e-6,
                seq=seq, entities=keys, metadata=t.metadata,
            ))
        return records

    # ================================================================ turns waiting for the store
    @keywords_checked
    def pending_turns(self, user_id: str | None = None) -> int:
        """How many turns wait in this process to be written because the store was unavailable (0 normally).

        They were stored with ``defer_if_unavailable=True`` (the LangChain
        middleware and chat history, the LlamaIndex memory); they are written
        before the user's next write or ``retrieve`` that reaches the store,
        and lost if the process exits first.

        Args:
            user_id: One user's count (default: every user's together).
        """
        if user_id is not None:
            check_id("user_id", user_id, self.limits)
        with self._pending_lock:
            if user_id is None:
                return sum(len(q) for q in self._pending.values())
            q = self._pending.get(user_id)
            return len(q) if q else 0

    def _has_pending(self, user_id: str) -> bool:
        return bool(self._pending) and user_id in self._pending  # no lock: a hint, checked again under it

    def _pending_ids(self, user_id: str) -> set[str]:
        if not self._has_pending(user_id):
            return set()
        with self._pending_lock:
            return {p.record.id for p in self._pending.get(user_id, ())}

    def _defer(self, user_id: str, st: _UserState | None, records: Sequence[Record], stored: Sequence[Record],
               emb: np.ndarray, parts: Sequence[np.ndarray | None], exc: StoreError) -> None:
        """Keep turns the store could not take (the caller holds the user's lock when ``st`` is given): into the
        cached index, so they are served, and onto the user's queue, dropping the oldest past the bound."""
        entries = [_Pending(r, s, np.asarray(emb[i], dtype=np.float32), parts[i])
                   for i, (r, s) in enumerate(zip(records, stored))]
        if st is not None:
            st.index.add(records, emb, parts)
        with self._pending_lock:
            q = self._pending.setdefault(user_id, deque())
            q.extend(entries)
            dropped = [q.popleft() for _ in range(max(0, len(q) - self.MAX_PENDING_TURNS))]
            waiting = len(q)
        self.metrics.incr("turns_deferred", len(entries))
        _log.warning("chatrecall: the store is unavailable (%s): %d turn(s) of user %r kept in this process, %d "
                     "waiting; they are written, in order, at the user's next add or retrieve that reaches the "
                     "store, and lost if the process exits first", exc, len(entries), user_id, waiting)
        if dropped:
            if st is not None:
                st.index.remove([p.record.id for p in dropped])
            self.metrics.incr("pending_dropped", len(dropped))
            _log.warning("chatrecall: more than %d turns of user %r wait for the store: the oldest %d dropped "
                         "(ChatRecall.MAX_PENDING_TURNS; stats() counter 'pending_dropped')",
                         self.MAX_PENDING_TURNS, user_id, len(dropped))

    def _defer_uncached(self, user_id: str, rows: Sequence[tuple[str, Turn]], now: float, exc: StoreError) -> None:
        """Keep the turns of a user whose index could not be loaded; they join the index when it is."""
        known = self._pending_ids(user_id)
        with self._pending_lock:
            counts: dict[str, int] = {}
            for p in self._pending.get(user_id, ()):
                counts[p.record.session_id] = counts.get(p.record.session_id, 0) + 1
        fresh: dict[str, tuple[str, Turn]] = {}
        for rid, t in rows:
            if rid not in known:
                fresh.setdefault(rid, (rid, t))
        if not fresh:
            return
        # numbered after the kept turns of the session (the stored ones are unknown here, and older)
        records = self._records(list(fresh.values()), now, counts)
        emb, parts, stored = self._embed_memories(records)
        self._defer(user_id, None, records, stored, emb, parts, exc)

    def _index_pending(self, user_id: str, st: _UserState) -> None:
        """Add the user's waiting turns to a freshly loaded index (the caller holds its lock). A turn kept while the
        index could not be loaded that the store already holds (the same text in the same session, stored before)
        is not written again: that would move the stored turn to the time it was repeated."""
        if not self._has_pending(user_id):
            return
        with self._pending_lock:
            q = self._pending.get(user_id, deque())
            todo = [p for p in q if p.record.id not in st.index]
            if len(todo) < len(q):
                if todo:
                    self._pending[user_id] = deque(todo)
                else:
                    self._pending.pop(user_id, None)
        if todo:
            st.index.add([p.record for p in todo], np.stack([p.vector for p in todo]), [p.parts for p in todo])

    def _write_pending(self, user_id: str, st: _UserState) -> int:
        """Write the user's waiting turns, oldest first, in one store call; returns how many.

        The caller holds the user's lock inside ``self._snapshots.writing(user_id)``. The records
        are the ones built when the turns were first stored: a retry after a write that landed despite its
        error stores the same rows again, no duplicate.

        Raises:
            StoreError: The store failed; the turns stay queued.
        """
        if not self._has_pending(user_id):
            return 0
        with self._pending_lock:
            todo = list(self._pending.get(user_id, ()))
        if not todo:
            return 0
        self.store.upsert(COLLECTION_MEMORIES, [p.stored for p in todo], np.stack([p.vector for p in todo]))
        written = set(map(id, todo))
        with self._pending_lock:
            rest = deque(p for p in self._pending.get(user_id, ()) if id(p) not in written)
            if rest:
                self._pending[user_id] = rest
            else:
                self._pending.pop(user_id, None)
        if st.seen_total is not None:
            st.seen_total += len(todo)
        self.metrics.incr("pending_written", len(todo))
        _log.info("chatrecall: %d turn(s) of user %r kept while the store was unavailable are now written",
                  len(todo), user_id)
        return len(todo)

    def _drop_pending(self, user_id: str, *, session_id: str | None = None,
                      ids: Collection[str] | None = None) -> int:
        """Forget waiting turns (all of the user's, one session's, or these ids); returns how many."""
        if not self._has_pending(user_id):
            return 0
        with self._pending_lock:
            q = self._pending.get(user_id, deque())
            keep = deque(p for p in q if not ((session_id is None or p.record.session_id == session_id)
                                              and (ids is None or p.record.id in ids)))
            n = len(q) - len(keep)
            if keep:
                self._pending[user_id] = keep
            else:
                self._pending.pop(user_id, None)
        return n

    def _embed_memories(self, records: Sequence[Record]) -> tuple[np.ndarray, list[np.ndarray | None], list[Record]]:
        """Embed memories and, with ``RetrievalConfig.sentence_vectors``, in the same batch the sentences of the
        multi-sentence ones (a fact inside a long turn about something else is found by its own sentence).
        Returns the turn vectors, the sentence vectors per record, and the records as the store keeps them
        (sentence vectors in their metadata)."""
        if not self.retrieval_config.sentence_vectors:
            return self.embedder.embed_documents([r.text for r in records]), [None] * len(records), list(records)
        split = [sentence_parts(r.text, r.role) for r in records]
        vecs = self.embedder.embed_documents([r.text for r in records] + [x for ps in split for x in ps])
        emb = vecs[: len(records)]
        parts: list[np.ndarray | None] = []
        stored: list[Record] = []
        at = len(records)
        for rec, ps in zip(records, split):
            if not ps:
                parts.append(None)
                stored.append(rec)
                continue
            pv = np.asarray(vecs[at: at + len(ps)], dtype=np.float32)
            at += len(ps)
            parts.append(pv)
            stored.append(dataclasses.replace(rec, metadata={**rec.metadata, PARTS_KEY: encode_parts(pv)}))
        return emb, parts, stored

    @_open_only
    @keywords_checked
    def add_documents(
        self,
        documents: Iterable[str | Mapping[str, Any]],
        *,
        user_id: str | None = None,
        max_words: int = 160,
        overlap_words: int = 30,
    ) -> list[str]:
        """Chunk and store corpus documents; returns the chunk ids.

        Args:
            documents: Strings, or mappings with ``text`` (or ``content``) and
                optional ``id``, ``title`` and ``metadata``; another key is refused.
                LlamaIndex documents and nodes: convert them with
                :func:`chatrecall.adapters.llamaindex.nodes_to_documents`.
            user_id: Owner; ``None`` makes the documents readable by every user.

        Raises:
            InvalidInputError: A document is none of these (the message says how to pass a LlamaIndex or
                LangChain document), or a field is invalid.
        """
        owner = SHARED_OWNER if user_id is None else check_id("user_id", user_id, self.limits)
        check_chunking(max_words, overlap_words)
        if isinstance(documents, (str, bytes, Mapping)) or framework_document(documents) is not None:
            # one document; a framework's (a pydantic model) would be iterated as its fields
            documents = [documents]  # type: ignore[list-item]
        elif not isinstance(documents, Iterable):
            raise InvalidInputError(
                f"documents must be a str, a mapping or an iterable of them, got {type(documents).__name__}"
            )
        records: list[Record] = []
        indexed: list[str] = []  # what each chunk is embedded from: its document's title, then the chunk
        now = self._clock()
        seen: dict[str, tuple[int, str]] = {}
        explicit: list[str] = []  # caller-given document ids: a re-add replaces the old version
        for n, doc in enumerate(documents):
            if isinstance(doc, Mapping):
                doc = check_document_fields(doc, f"documents[{n}]")
                text = check_text(f"documents[{n}].text", doc.get("text"), self.limits)
                md = dict(check_metadata(doc.get("metadata"), self.limits))
                raw_id = doc.get("id")
                if isinstance(raw_id, int) and not isinstance(raw_id, bool):
                    raw_id = str(raw_id)
                doc_id = _hash_id(owner, text) if raw_id is None else check_id(
                    f"documents[{n}].id", raw_id, self.limits)
                if raw_id is not None:
                    explicit.append(doc_id)
                if doc.get("title") is not None:
                    md["title"] = check_text(f"documents[{n}].title", doc["title"], self.limits)
            else:
                if not isinstance(doc, str):
                    raise document_item_error(doc, f"documents[{n}]")
                text = check_text(f"documents[{n}]", doc, self.limits)
                md, doc_id = {}, _hash_id(owner, text)
            first = seen.setdefault(doc_id, (n, text))
            if first[0] != n:
                if first[1] == text:
                    continue  # the same document twice: store it once
                raise InvalidInputError(
                    f"documents[{n}].id={doc_id!r} repeats documents[{first[0]}] with a different text"
                )
            title = md.get("title")
            for j, chunk in enumerate(chunk_text(text, max_words, overlap_words)):
                # A title often names what the text is about and the text never does ("Stockbridge Sunday Market:
                # trader rules" over "Pitches on Saunders Street cost 45"): every chunk is embedded, and its
                # entities found, with its document's title first (stop 43, T1). The chunk alone is stored.
                seen_as = chunk if title is None else f"{title}\n\n{chunk}"
                indexed.append(seen_as)
                keys = tuple(dict.fromkeys(e.key for e in self.extractor.extract(seen_as)))
                records.append(Record(
                    id=_hash_id(owner, doc_id, str(j)), text=chunk, user_id=owner, session_id=doc_id,
                    role="document", timestamp=now, seq=j, entities=keys, metadata=md,
                ))
        if not records:
            return []
        emb = self.embedder.embed_documents(indexed)
        self.store.upsert(COLLECTION_CORPUS, records, emb)
        if explicit:
            # A document re-added under its own id replaces the old version whole:
            # drop the chunks the new text no longer has. After the upsert, so a
            # failure in between leaves the old chunks rather than no document.
            fresh = {r.id for r in records}
            old = self.store.get(COLLECTION_CORPUS, where={"user_id": owner, "session_id": tuple(explicit)})
            stale = [r.id for r in old.records if r.id not in fresh]
            if stale:
                self.store.delete(COLLECTION_CORPUS, ids=stale)
        self._corpus_count = None
        self.metrics.incr("corpus_chunks_stored", len(records))
        return [r.id for r in records]

    # ================================================================ pins
    def _load_pins(self, user_id: str, st: _UserState, *, fresh: bool = False) -> list[Pin]:
        if st.pins is None or fresh or self._clock() - st.pins_loaded_at > 1.0:
            batch = self.store.get(COLLECTION_PINS, where={"user_id": user_id})
            recs = sorted(batch.records, key=lambda r: (r.timestamp, r.seq, r.id))
            st.pins = [Pin(id=r.id, text=r.text, user_id=r.user_id, session_id=r.session_id or None,
                           created_at=r.timestamp, tokens=self.token_counter.count(r.text)) for r in recs]
            st.pins_loaded_at = self._clock()
        return st.pins

    @_open_only
    @keywords_checked
    def pin(self, text: str, *, user_id: str, session_id: str | None = None) -> Pin:
        """Pin a standing constraint; it is injected on every turn until unpinned.

        Pinning the same text twice returns the existing pin.

        Raises:
            PinLimitError: The pin would exceed ``max_pins`` or ``max_tokens``;
                nothing is changed.
        """
        check_text("text", text, self.limits)
        check_id("user_id", user_id, self.limits)
        if session_id is not None:
            check_id("session_id", session_id, self.limits)
        tokens = self.token_counter.count(text)
        st = self._state(user_id)
        with st.lock:
            current = self._load_pins(user_id, st, fresh=True)
            pid = "pin-" + _hash_id("pin", user_id, session_id or "", text.strip())
            for p in current:
                if p.id == pid:
                    return p
            cfg = self.pin_config
            if len(current) + 1 > cfg.max_pins:
                raise PinLimitError(
                    f"cannot pin {text[:40]!r}: user {user_id!r} already has {len(current)} pins (max_pins={cfg.max_pins}); "
                    "unpin one first"
                )
            used = sum(p.tokens for p in current)
            if used + tokens > cfg.max_tokens:
                raise PinLimitError(
                    f"cannot pin {text[:40]!r} ({tokens} tokens): pins of user {user_id!r} would use "
                    f"{used + tokens} tokens (max_tokens={cfg.max_tokens})"
                )
            now = self._clock()
            rec = Record(id=pid, text=text, user_id=user_id, session_id=session_id or "", role="pin",
                         timestamp=now, seq=len(current))
            self.store.upsert(COLLECTION_PINS, [rec], self.embedder.embed_documents([text]))
            pin = Pin(id=pid, text=text, user_id=user_id, session_id=session_id, created_at=now, tokens=tokens)
            st.pins = [*current, pin]
            self.metrics.incr("pins_added")
            return pin

    @_open_only
    @keywords_checked
    def unpin(self, pin_id: str | Pin, *, user_id: str | None = None) -> Pin:
        """Remove a pin; returns it.

        Args:
            pin_id: The pin's id, or the :class:`Pin` that :meth:`pin` returned.
            user_id: Only remove it if it is this user's.

        Raises:
            NotFoundError: No such pin (or it belongs to another user).
        """
        if isinstance(pin_id, Pin):
            pin_id = pin_id.id
        check_id("pin_id", pin_id, self.limits)
        batch = self.store.get(COLLECTION_PINS, ids=[pin_id])
        rec = batch.records[0] if batch.records else None
        if rec is None or (user_id is not None and rec.user_id != user_id):
            raise NotFoundError(f"no pin with id {pin_id!r}" + (f" for user {user_id!r}" if user_id else ""))
        st = self._state(rec.user_id)
        with st.lock:
            self.store.delete(COLLECTION_PINS, ids=[pin_id])
            st.pins = None
        self.metrics.incr("pins_removed")
        return Pin(id=rec.id, text=rec.text, user_id=rec.user_id, session_id=rec.session_id or None,
                   created_at=rec.timestamp, tokens=self.token_counter.count(rec.text))

    @_open_only
    @keywords_checked
    def pins(self, user_id: str, session_id: str | None = None, *, cached_if_unavailable: bool = False) -> list[Pin]:
        """The user's pins, oldest first: global ones plus those of ``session_id`` if given.

        Args:
            cached_if_unavailable: When the store cannot be reached and this
                process holds the user's pins (read earlier), return those
                instead of raising, with a warning logged (logger
                ``chatrecall``), as ``retrieve`` uses them; the LlamaIndex
                memory reads pins so during an outage.

        Raises:
            InvalidInputError: A bad id or ``cached_if_unavailable``.
            StoreUnavailableError: The store cannot be reached and the pins are
                not cached (or ``cached_if_unavailable`` is False).
        """
        check_id("user_id", user_id, self.limits)
        check_bool("cached_if_unavailable", cached_if_unavailable)
        st = self._state(user_id)  # a cold process with the store down raises here
        with st.lock:
            try:
                allp = list(self._load_pins(user_id, st))
            except StoreUnavailableError as exc:
                if not cached_if_unavailable or st.pins is None:
                    raise
                allp = list(st.pins)
                _log.warning("chatrecall: the store is unavailable (%s): the pins of user %r are served from this "
                             "process's cache", exc, user_id)
        if session_id is None:
            return allp
        return [p for p in allp if p.session_id in (None, session_id)]

    # ================================================================ forget
    @_open_only
    @keywords_checked
    def forget(self, user_id: str, session_id: str | None = None) -> ForgetReport:
        """Delete a user's (or one session's) memories, pins and index entries.

        Without ``session_id`` the user's private corpus documents go too.

        Raises:
            NotFoundError: Nothing is stored for this user (or session).
        """
        check_id("user_id", user_id, self.limits)
        where: dict[str, Any] = {"user_id": user_id}
        if session_id is not None:
            where["session_id"] = check_id("session_id", session_id, self.limits)
        st = self._state(user_id)
        with st.lock, self._snapshots.writing(user_id):
            mem = self.store.delete(COLLECTION_MEMORIES, where=where)
            pins = self.store.delete(COLLECTION_PINS, where=where)
            mem += self._drop_pending(user_id, session_id=session_id)  # never written later
            docs = 0
            if session_id is None:
                docs = self.store.delete(COLLECTION_CORPUS, where={"user_id": user_id})
                self._corpus_count = None
                with self._users_lock:
                    self._users.pop(user_id, None)
                self._snapshots.invalidate(user_id)
            else:
                gone = [r.id for r in st.index.records if r.session_id == session_id]
                st.index.remove(gone)
                st.pins = None
                st.correction_pending.discard(session_id)
                st.corpus_last.pop(session_id, None)
                st.corpus_docs.pop(session_id, None)
        if mem == 0 and pins == 0 and docs == 0:
            raise NotFoundError(
                f"nothing stored for user {user_id!r}" + (f" in session {session_id!r}" if session_id else "")
                + ": nothing to forget (to start a user afresh whether or not they are new, catch "
                "chatrecall.NotFoundError)"
            )
        self.metrics.incr("forgets")
        return ForgetReport(user_id=user_id, session_id=session_id, memories=mem, pins=pins)

    @_open_only
    @keywords_checked
    def count(self, user_id: str, session_id: str | None = None) -> int:
        """Memories stored for a user (or one session), read from the store."""
        check_id("user_id", user_id, self.limits)
        where: dict[str, Any] = {"user_id": user_id}
        if session_id is not None:
            where["session_id"] = check_id("session_id", session_id, self.limits)
        return self.store.count(COLLECTION_MEMORIES, where)

    # ================================================================ read path
    @keywords_checked
    def decide(self, message: str) -> GateDecision:
        """Run only the gate (no search, no I/O)."""
        check_text("message", message, self.limits)
        return self.gate.decide(message)

    @_open_only
    @keywords_checked
    def recent(self, user_id: str, session_id: str) -> tuple[ScoredItem, ...]:
        """The recent window of a session: last N turns, each and all token capped."""
        check_id("user_id", user_id, self.limits)
        check_id("session_id", session_id, self.limits)
        return self._recent(self._state(user_id), session_id)

    @_open_only
    @keywords_checked
    def history(self, user_id: str, session_id: str, *, cached_if_unavailable: bool = False) -> list[Record]:
        """Every stored turn of a session, oldest first (read from the store; with the turns that wait in this
        process to be written, :meth:`pending_turns`).

        Args:
            cached_if_unavailable: For a chat history read during a store
                outage (the LangChain chat history does it): when the store
                cannot be reached and the user's index is cached in this
                process, return the session's turns from that index (what
                this process stored, read or kept, without turns other
                processes stored since it was loaded) with a warning logged
                (logger ``chatrecall``), as ``retrieve`` serves from it.

        Raises:
            InvalidInputError: A bad id or ``cached_if_unavailable``.
            StoreUnavailableError: The store cannot be reached and the user's
                index is not cached (or ``cached_if_unavailable`` is False).
        """
        check_id("user_id", user_id, self.limits)
        check_id("session_id", session_id, self.limits)
        check_bool("cached_if_unavailable", cached_if_unavailable)
        try:
            records = list(self.store.get(COLLECTION_MEMORIES,
                                          where={"user_id": user_id, "session_id": session_id}).records)
        except StoreUnavailableError as exc:
            st = self._cached_state(user_id) if cached_if_unavailable else None
            if st is None:  # a cold process: nothing to serve, the store's error says which server
                raise
            with st.lock:  # the index holds the turns kept in this process too
                records = [st.index.records[p] for p in st.index.session_positions(session_id).tolist()]
            _log.warning("chatrecall: the store is unavailable (%s): the history of session %r of user %r is served "
                         "from this process's cached index (%d turns; turns other processes stored since it was "
                         "loaded are missing)", exc, session_id, user_id, len(records))
        if self._has_pending(user_id):  # turns kept while the store was down, not yet written
            have = {r.id for r in records}
            with self._pending_lock:
                records += [p.record for p in self._pending.get(user_id, ())
                            if p.record.session_id == session_id and p.record.id not in have]
        return sorted(map(without_parts, records), key=lambda r: (r.timestamp, r.seq))

    def _recent(self, st: _UserState, session_id: str, as_of: float | None = None) -> tuple[ScoredItem, ...]:
        """The session's last turns (stored up to ``as_of`` when given), within the recent window's caps."""
        cfg = self.retrieval_config
        if cfg.recent_turns == 0:
            return ()
        count = self.token_counter.count
        with st.lock:
            session = st.index.session_positions(session_id)
            if as_of is not None and session.size:
                session = session[st.index.timestamps[session] <= as_of]
            positions = session[-cfg.recent_turns:].tolist()
            recs = [(st.index.records[p], st.index.token_count(p, count)) for p in positions]  # counts cached
        out: list[ScoredItem] = []
        used = 0
        for rec, tokens in reversed(recs):  # newest first, so the oldest is dropped when over the cap
            cut = tokens > cfg.recent_turn_max_tokens
            text = rec.text
            if cut:
                text, cut = truncate_to_tokens(rec.text, cfg.recent_turn_max_tokens, self.token_counter)
                tokens = count(text)
                self.metrics.incr("truncations")
            if used + tokens > cfg.recent_max_tokens:
                self.metrics.incr("truncations")
                break
            used += tokens
            out.append(ScoredItem(id=rec.id, text=text, source="recent", score=1.0, components={},
                                  tokens=tokens, tier="recent", why="recent window" + (" (truncated)" if cut else ""),
                                  record=rec))
        return tuple(reversed(out))

    @_open_only
    @keywords_checked
    def search(
        self,
        query: str,
        *,
        user_id: str,
        k: int | None = None,
        strategy: Strategy | str | None = None,
        session_id: str | None = None,
    ) -> tuple[ScoredItem, ...]:
        """Rank the user's memories for ``query`` (no gate, no budget).

        Args:
            strategy: ``recency``, ``relevance``, ``keyword``, ``entity``,
                ``graph`` or ``hybrid``; the query classifier picks when None.
            session_id: Restrict to one session (default: all of the user's).
        """
        check_text("query", query, self.limits)
        check_id("user_id", user_id, self.limits)
        if session_id is not None:
            check_id("session_id", session_id, self.limits)
        strat = check_strategy(strategy)
        k = self._check_k(k)
        ents = self.extractor.extract(query)
        qvec = self.embedder.embed_query(query)
        res = self._search_memory(query, qvec, ents, user_id, strategy=strat, k=k, session_id=session_id)
        return res.items

    def _check_k(self, k: Any) -> int:
        checked = check_k(k)
        return self.retrieval_config.top_k if checked is None else checked

    def _search_memory(
        self,
        query: str,
        qvec: np.ndarray,
        entities: Sequence[Entity],
        user_id: str,
        *,
        strategy: Strategy | None,
        k: int,
        session_id: str | None = None,
        exclude: frozenset[str] = frozenset(),
        weights: Mapping[str, float] | None = None,
        refresh: bool = True,
        now: float | None = None,
        pins: Sequence[str] = (),
        as_of: float | None = None,
    ) -> _Search:
        """Rank one user's memories for ``query`` (the ranking itself: :func:`rank_memories`).

        Candidates come from the in-process index (exact cosine top-C, BM25,
        entities, the newest turns, the turns of a period the query names, and
        their conversation neighbours); see :func:`rank_memories` for the fusion.
        ``refresh=False``: the caller has just found the index fresh
        (:meth:`_fresh_without_store`). ``now``: the reference time (default: the engine's clock). ``pins``: the
        texts of the pins shown with the result; a turn that repeats one (:func:`repeats`: the request that made
        it, "From now on, always give distances in kilometres.") is left out, as the recent window is. ``as_of``:
        turns stored after it are left out (``retrieve(as_of=...)``).
        """
        now = self._clock() if now is None else now
        st = self._state(user_id)
        if refresh:
            self._refresh(st, user_id, qvec)
        with st.lock:
            idx = st.index
            allowed = idx.session_positions(session_id) if session_id is not None and len(idx) else None
            ex = np.asarray(sorted(idx.pos[i] for i in exclude if i in idx.pos), dtype=np.int64)
            seen = ex  # what the caller shows: a change among it may go with the result (rank_memories)
            echo = idx.repeating(pins) if pins and len(idx) else ex[:0]
            echo = echo[~np.isin(echo, ex)]
            if echo.size:
                ex = np.union1d(ex, echo)
            r = rank_memories(idx, query, qvec, entities, strategy=strategy, k=k, now=now,
                              config=self.retrieval_config, allowed=allowed, exclude=ex, weights=weights, until=as_of,
                              seen=seen)
            items: list[ScoredItem] = []
            rejected: list[ScoredItem] = []
            has_cue = bool(r.time_cue)
            # Python floats and ints once per column, not one numpy scalar per cell
            columns = {c: v.tolist() for c, v in r.components.items()}
            scores, hops = r.scores.tolist(), r.hops.tolist()
            support, since, lifted = r.support.tolist(), r.since_answer.tolist(), r.lifted.tolist()
            outranked, sent_lift = r.outranked.tolist(), r.sentence_lift.tolist()
            for rank, p in enumerate(r.positions.tolist()):
                rec = idx.records[p]
                comps = {c: col[rank] for c, col in columns.items()}
                why = self._why(rec, comps, r.dense_rank.get(p), r.keys, hops[rank], r.related)
                if support[rank] > 0:  # in the score, in no component: say where it came from (helper-94)
                    why += (f"; said since the old answer to this question (+{support[rank]:.2f})" if since[rank]
                            else f"; answers the question before it (+{support[rank]:.2f})")
                if lifted[rank]:  # also in the score and no component (C66)
                    why += "; states a change: ranked above the earlier turn about it"
                    if rec.id in exclude:
                        why += " (said in this conversation: the recent window or the history the caller shows)"
                elif outranked[rank]:  # the change above may show the same score, rounded (nu47, nu48)
                    why += "; a later change to it is ranked above"
                if has_cue:
                    # the recency slot held the time fit (a named period, a date or time for "when"): shown as such
                    comps = {("time" if c == "recency" else c): v for c, v in comps.items()}
                    if comps["time"] > 0:
                        why += "; time match" if not r.time_cue.asks_error or idx.has_time[p] else "; shows an error"
                if sent_lift[rank] >= 0.005:
                    why += f"; one of its sentences matches better than the whole turn (+{sent_lift[rank]:.2f})"
                if rank >= k:
                    why = f"rank {rank + 1} > k={k}; {why}"
                score = scores[rank]
                item = ScoredItem(id=rec.id, text=rec.text, source="memory", score=score,
                                  components=comps, tokens=idx.token_count(p, self.token_counter.count),
                                  tier=tier_of(score, self.budget_config), why=why, record=rec,
                                  sentence_lift=sent_lift[rank])
                (items if rank < k else rejected).append(item)
        return _Search(tuple(items), tuple(rejected), r.strategy, r.query_type, int(echo.size))

    def _refresh(self, st: _UserState, user_id: str, qvec: np.ndarray) -> None:
        """Pick up memories other processes wrote, when the store can say so cheaply.

        A metadata-filtered store query is cheap on small stores and the
        in-memory store, but costs tens of milliseconds on a large Chroma
        collection. It is asked on every search while its measured latency
        stays under ``_FRESH_MS`` (judged after a few searches, so one slow
        call does not switch it off), else once per ``sync_interval_s`` (the
        periodic sync reloads the whole user anyway). A store that says it is
        ``shared`` (a Chroma server) is asked every time. A local store is not
        asked at all while the user's snapshot version shows that no engine
        wrote the user since this index matched the store (one small file
        read; see :meth:`SnapshotCache.unchanged`).
        """
        if self._fresh_without_store(st, user_id):
            return
        now = time.monotonic()
        probes, ewma = self._fresh_n, self._fresh_ms
        if self._shared_ids():
            self._probe_shared(st, user_id, now)
            return
        t0 = time.perf_counter()
        try:
            hits = self.store.query(COLLECTION_MEMORIES, qvec, 8, {"user_id": user_id})
        except StoreError as exc:  # the cached index still answers; retrieve reports it as degraded
            st.degraded = f"freshness probe failed: {type(exc).__name__}"
            self.metrics.incr("degraded")
            self._fresh_at = now
            return
        st.degraded = None
        ms = (time.perf_counter() - t0) * 1e3
        self._fresh_ms = ms if probes == 0 else 0.7 * ewma + 0.3 * ms
        self._fresh_n = probes + 1
        self._fresh_at = now
        unknown = [h.record.id for h in hits if h.record.id not in st.index]
        if unknown:
            self._pull(st, unknown)

    def _shared_ids(self) -> bool:
        """The store is a server other processes write to, and can list a user's ids (the cheap probe)."""
        return bool(getattr(self.store, "shared", False)) and callable(getattr(self.store, "ids", None))

    def _fresh_without_store(self, st: _UserState, user_id: str) -> bool:
        """True when :meth:`_refresh` has nothing to ask the store: the cached index is as fresh as it gets.

        A local store: no engine wrote the user since the index matched the
        store (its snapshot version file says so), or the probe is switched
        off as too slow until the next periodic sync. A shared store: the
        user was resynced less than ``_RESYNC_S`` ago.
        """
        now = time.monotonic()
        shared = bool(getattr(self.store, "shared", False))  # a server other processes write to: always ask
        if shared:
            return callable(getattr(self.store, "ids", None)) and now - st.resynced_at < _RESYNC_S
        if self._snapshots.unchanged(user_id):
            return True  # no engine wrote this user since its index last matched the store (the version file says so)
        return (self._fresh_n >= _FRESH_MIN_PROBES and self._fresh_ms > _FRESH_MS
                and now - self._fresh_at < self._sync_interval)

    def _probe_shared(self, st: _UserState, user_id: str, now: float) -> None:
        """Server store: one collection count per search; the user's ids are re-read only when it moved.

        Bound: a write or delete by another process that changes the count of
        the memories collection is in this index at the first search starting
        ``_RESYNC_S`` (1 s) or more after the user's previous resync; one that
        leaves the count unchanged (a delete plus an add) within
        ``sync_interval_s`` (the periodic reload).
        """
        if now - st.resynced_at < _RESYNC_S:
            return
        try:
            total = self.store.count(COLLECTION_MEMORIES)
            if total == st.seen_total:
                st.degraded = None
                return
            # Under the user's lock, like every write of this process: an add that lands between
            # reading the ids and reconciling would otherwise look "gone" and be dropped from the cache.
            with st.lock:
                ids = self.store.ids(COLLECTION_MEMORIES, {"user_id": user_id})  # type: ignore[attr-defined]
                stored = set(ids) | self._pending_ids(user_id)  # a turn waiting to be written is not gone
                gone = [rid for rid in st.index.pos if rid not in stored]
                if gone:
                    st.index.remove(gone)
                missing = [rid for rid in ids if rid not in st.index]
                if missing:
                    self._pull(st, missing)
        except StoreError as exc:  # the cached index still answers; retrieve reports it as degraded
            st.degraded = f"freshness probe failed: {type(exc).__name__}"
            self.metrics.incr("degraded")
            return
        st.degraded = None
        st.seen_total, st.resynced_at = total, now
        self.metrics.incr("fresh_resyncs")

    @staticmethod
    def _why(rec: Record, comps: Mapping[str, float], dense_rank: int | None, keys: Sequence[str],
             hops: int, related: Sequence[str]) -> str:
        why = []
        if dense_rank is not None:
            why.append(f"vector #{dense_rank + 1}")
        if comps.get("keyword", 0) > 0:
            why.append(f"keyword {comps['keyword']:.2f}")
        shared = [k for k in keys if k in rec.entities]
        if shared:
            why.append("entity " + ",".join(shared[:3]))
        rel = [k for k in related if k in rec.entities]
        if rel and not shared:
            why.append("related entity " + ",".join(rel[:2]))
        if hops > 0:
            why.append(f"graph {hops}-hop")
        return "; ".join(why) or "recency"

    def _search_corpus(self, qvec: np.ndarray, entities: Sequence[Entity], user_id: str, k: int, *,
                       context: str = "") -> list[ScoredItem]:
        hits = self.store.query(COLLECTION_CORPUS, qvec, max(k * 3, k), {"user_id": (SHARED_OWNER, user_id)})
        if not hits:
            return []
        keys = {e.key for e in entities if e.kind in _ANCHOR_KINDS}
        sims = np.asarray([h.similarity for h in hits], dtype=np.float32)
        anchor = np.asarray([bool(keys & set(h.record.entities)) for h in hits], dtype=np.float32)
        final = np.clip(sims, 0, 1) * 0.8 + 0.2 * anchor
        # Passages under the relevance floor without an anchor would only cost tokens.
        final = np.where((sims >= self.retrieval_config.relevance_floor) | (anchor > 0), final, -1.0)
        out = []
        top = topk(final, k)
        for j in top[final[top] >= 0].tolist():
            h = hits[j]
            out.append(ScoredItem(
                id=h.record.id, text=h.record.text, source="corpus", score=float(final[j]),
                components={"relevance": float(sims[j]), "anchor": float(anchor[j])},
                tokens=self.token_counter.count(h.record.text), tier=tier_of(float(final[j]), self.budget_config),
                why=f"corpus vector #{j + 1}" + (f" ({context})" if context else "")
                + ("; anchor match" if anchor[j] else ""), record=h.record,
            ))
        return out

    def _useful(self, items: Sequence[ScoredItem], entities: Sequence[Entity], gate: GateDecision,
                query: str = "") -> str | None:
        """Cheap checks that a phase-1 memory hit answers the message; returns the reason or None."""
        if not items:
            return None
        best = items[0]
        own = _turn_score(best)
        if own >= self.retrieval_config.useful_score and self._about_message(best, gate, query):
            return f"score {own:.2f} >= {self.retrieval_config.useful_score}"
        anchors = {e.key for e in entities if e.kind in _ANCHOR_KINDS}
        for it in items:
            hit = anchors & set(it.record.entities if it.record else ())
            if hit:
                return f"anchor {sorted(hit)[0]!r} found in memory"
        qterms = self._content_terms(gate, query)
        if len(qterms) >= 2:
            for it in items:
                covered = len(qterms & set(tokenize(it.text))) / len(qterms)
                if covered >= 0.6:
                    return f"{covered:.0%} of the query's terms found in memory"
        # "that function" / "is it treatable": the hit must mention the head noun
        # (or, for a bare pronoun, at least carry an entity it can refer to).
        conts = [r.match for r in gate.reasons if r.category == "continuity"]
        heads = [tokenize(m)[-1] for m in conts if tokenize(m)]
        for it in items:
            low = it.text.casefold()
            head = next((h for h in heads if h in low), None)
            if head is not None:
                return f"memory supplies the referent of {head!r}"
            if conts and not heads and it.record and it.record.entities:
                return f"memory supplies an entity for {conts[0]!r}"
        return None

    @_open_only
    @keywords_checked
    def retrieve(
        self,
        message: str,
        *,
        user_id: str,
        session_id: str | None = None,
        k: int | None = None,
        strategy: Strategy | str | None = None,
        route: Route | str | None = None,
        budget_tokens: int | None = None,
        include_recent: bool = True,
        exclude_ids: Collection[str] = (),
        as_of: float | Any = None,
    ) -> RetrievalResult:
        """Decide whether and where to search for ``message``, search, and budget.

        The steps, each a method: the gate (:meth:`Gate.decide`), the user's
        cached state (pins, recent window), one route plan
        (:meth:`_plan_route`: gate verdict, forced route, correction, known
        anchors), the memory phase (:meth:`_memory_phase`, two-phase when only
        memory is planned), the corpus phase (:meth:`_corpus_phase`), the
        memory fallback when the corpus found nothing strong
        (:meth:`_fallback_phase`), and assembly into the budget
        (:meth:`_assemble`).

        Args:
            message: The user's new message. It is not stored by this call:
                store it with :meth:`add` once it is answered.
            user_id: Whose memories to search; nobody else's are ever read.
            session_id: Current session: enables the recent window and
                correction follow-up.
            k: Most memories and most passages returned (default ``top_k``;
                a memory-only turn first looks at ``phase1_top_k`` unless
                ``k`` is given).
            strategy: Force a memory strategy (default: query classifier).
            route: Force a route instead of the gate's.
            budget_tokens: Override the token budget for this call.
            include_recent: Inject the session's recent window. Turn it off
                when the caller already sends its own message history (an
                agent with a checkpointer): the window's turns are then still
                left out of the memory search, and still inform a correction
                and the corpus query, but are not put into the context twice.
            exclude_ids: Record ids the memory search leaves out, as it does
                the recent window: turns the caller's own history already
                shows (LlamaIndex ``ChatRecallRetriever(history=...)``), so
                they are not injected twice and ``k`` is filled from the
                rest. Unknown ids are ignored.
            as_of: Answer as of this moment (epoch seconds, an aware
                ``datetime``, or ISO 8601; naive means UTC), as the call would
                have then: turns stored after it are neither searched nor in
                the recent window, pins made after it are not shown, and
                recency, "last week" and the context's "now" are read from it
                instead of the engine's clock. A note says how many were left
                out. Documents are searched as they are now. Default: now, and
                everything stored.

        Backend failures never raise here: the result reports a degraded
        route in ``notes`` and carries whatever could be retrieved; a user
        whose index is cached is still served from memory while the store is
        down. Once the store was found unreachable, the steps that can only
        ask the store (corpus search, loading an uncached user) are skipped,
        so a dead or frozen store costs at most about two store timeouts.
        Turns kept in the process while the store was unavailable
        (``add_many(..., defer_if_unavailable=True)``) are written first; a
        note says so, or, when the store still does not take them, that they
        wait (the turn is then served from the cached index, which holds them).
        """
        t_start = time.perf_counter()
        check_text("message", message, self.limits)
        check_id("user_id", user_id, self.limits)
        if session_id is not None:
            check_id("session_id", session_id, self.limits)
        strat = check_strategy(strategy)
        explicit_k = k is not None
        k = self._check_k(k)
        if route is not None:
            try:
                route = Route(route)
            except ValueError:
                raise InvalidInputError(f"route={route!r} is unknown; use none, memory, corpus or both") from None
        if budget_tokens is not None and (isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int)
                                          or budget_tokens < 0):
            raise InvalidInputError(f"budget_tokens={budget_tokens!r} is invalid: must be an int >= 0")
        check_bool("include_recent", include_recent)
        shown = check_ids("exclude_ids", exclude_ids)
        until = check_timestamp(as_of, "as_of")
        run = _Run(message=message, user_id=user_id, session_id=session_id, k=k, explicit_k=explicit_k,
                   strategy=strat, t_start=t_start, now=self._clock() if until is None else until, shown=shown,
                   as_of=until)
        return self._retrieve(run, route, budget_tokens, include_recent)

    def _retrieve(self, run: _Run, forced: Route | None, budget_tokens: int | None,
                  include_recent: bool) -> RetrievalResult:
        t = time.perf_counter()
        building = self._gate is None  # built now, or by connect()'s background warm-up this turn waits for
        gate_obj = self.gate
        t1 = time.perf_counter()
        if building:
            run.timings["warmup"] = (t1 - t) * 1e3
        gate = gate_obj.decide(run.message)
        run.timings["gate"] = (time.perf_counter() - t1) * 1e3
        self._state_step(run, include_recent)
        if not gate.reasons and gate.route is not Route.NONE:
            self._note_learned(run, gate_obj, gate)
        run.query = self._search_text(run, gate)
        plan = self._plan_route(run, gate, forced)
        if plan.route is Route.NONE:
            self.metrics.incr("searches_skipped.route_none")
        else:
            t = time.perf_counter()
            run.entities = run.entities or self.extractor.extract(run.query)
            run.qvec = self.embedder.embed_query(run.query)
            run.timings["embed"] = (time.perf_counter() - t) * 1e3
            if plan.route.wants_memory:
                self._memory_phase(run, plan, gate)
                if plan.known_names:
                    self._keep_naming(run, plan.known_names, gate)
            if plan.probe:
                self._probe_phase(run, gate)
            if plan.route.wants_corpus or run.memory_short or run.corpus_probe:
                # the probe of a memory turn asks whether a document bears on the message: the recent turns say
                # what a follow-up is about, and on a statement they matched the conversation's document instead
                self._corpus_phase(run, gate, informed=plan.route is Route.BOTH or bool(run.memory_items)
                                   or plan.follows_up, recent=not run.probe_only)
            if plan.fallback and not plan.probe and not run.store_down \
                    and not self._strong_corpus(run.corpus_items):
                self._fallback_phase(run, gate)
            self._settle_phase1(run, plan)
            self._settle_corpus_probe(run, gate)
            if gate.correction:
                self._drop_ruled_out(run)
                self._drop_shown_documents(run)
            if run.shown:
                self._note_shown(run)
        result = self._assemble(run, gate, plan, budget_tokens)
        self._remember_documents_turn(run, result)
        return result

    @staticmethod
    def _note_learned(run: _Run, gate_obj: Gate, gate: GateDecision) -> None:
        """Say which words the learned combiner searched for when no pattern fired (helper-122, stop 41: "Harlow
        called, the deadline moved to the 14th of March." searched memory with empty reasons)."""
        route = gate.route

        def weight(m: float, c: float) -> float:  # the part of the head(s) that chose the route
            return max(m, c) if route is Route.BOTH else m if route.wants_memory else c

        parts = sorted(((f, weight(m, c)) for f, m, c in gate_obj.explain_learned(run.message)), key=lambda t: -t[1])
        words = [f"{feature_label(f)} ({w:+.2f})" for f, w in parts[:3] if w > 0]
        if words:
            run.notes.append(f"no pattern fired: the learned combiner chose {gate.route.value} (its strongest "
                             f"features: {', '.join(words)})")

    def _keep_naming(self, run: _Run, names: tuple[str, ...], gate: GateDecision) -> None:
        """Keep the memories that name one of ``names``: a corpus question searched memory only because it names
        something the user spoke of; memories that matched its other words ("morning" in "how do I say 'good
        morning' in Portuguese?") are about something else. A message that speaks of the user's own things (a
        personal pattern: "Can Marek join the sailing class today as my guest?") also keeps the memories useful
        on their own (C53, helper-118: the guest fee the assistant had quoted and the class's new day were left
        out for not naming Marek)."""
        wanted = set(names)
        own = any(r.category == "personal" and r.weight > 0 and names_own(r.match) for r in gate.reasons)
        floor = self.retrieval_config.useful_score

        def keep(i: ScoredItem) -> bool:
            if i.record is None:
                return False
            if any(overlapping_keys(w, i.record.entities) for w in wanted):  # "acme" in "Acme Logistics" too (nu47)
                return True
            return own and _turn_score(i) >= floor and self._about_message(i, gate, run.query)

        kept = [i for i in run.memory_items if keep(i)]
        if len(kept) == len(run.memory_items):
            return
        ids = {i.id for i in kept}
        why = f"names none of {', '.join(map(repr, names))}, the name memory was searched for"
        run.rejected.extend(dataclasses.replace(i, why=why) for i in run.memory_items if i.id not in ids)
        run.notes.append(f"{len(run.memory_items) - len(kept)} memories left out: {why}")
        run.memory_items = kept

    @staticmethod
    def _note_shown(run: _Run) -> None:
        """Say how many stored turns the memory search left out because the caller's history shows them."""
        if run.search is None or run.st is None:
            return
        with run.st.lock:
            n = sum(i in run.st.index.pos for i in run.shown)
        if n:
            run.notes.append(f"{n} stored turn{'s' if n != 1 else ''} left out: the caller shows them "
                             f"(exclude_ids)")

    def _remember_documents_turn(self, run: _Run, result: RetrievalResult) -> None:
        """Whether this turn brought documents (passages were injected, not only searched for), for a correction
        or a follow-up on the session's next turn. Passages the probe of a memory turn kept beside useful memories
        do not count (memory answered; "and how many tiers is it now?" after "When's Helen's wedding?" stays a
        memory turn), unless the memories lacked the answer form the message asked for. For a correction the
        documents must have answered the turn (C52): a strong passage, or passages alone. "When is Marek landing?"
        was answered by memory with weak passages beside it, and "no, I meant what time he lands" then searched both
        (k memories, every passage); a follow-up ("and what's the pitch fee there?" after the market's set-up time,
        a weak passage beside memories) still asks the documents again."""
        st, sid = run.st, run.session_id
        if st is None or sid is None:
            return
        passages = [i for i in result.items if i.source == "corpus"]
        if not run.probe_only and passages:
            st.corpus_last[sid] = self._strong_corpus(passages) or len(passages) == len(result.items)
        else:
            st.corpus_last.pop(sid, None)
        # what a correction asking for "the other one" rules out: the documents the turn got, whatever brought them
        # (nu48: the electrician's quote came with the memories of "How much was the quote again?")
        docs = tuple(dict.fromkeys(i.record.session_id for i in passages if i.record is not None))
        if docs:
            st.corpus_docs[sid] = docs
        else:
            st.corpus_docs.pop(sid, None)

    # ---------------------------------------------------------------- retrieve steps
    def _search_text(self, run: _Run, gate: GateDecision) -> str:
        """What the searches look for: a correction's message without what it rules out, after the question it
        corrects. (A follow-up that points back adds names to its memory search only: :meth:`_follow_up_names`.)

        "no, I meant the other hive" names the new referent; the question before it ("what colour is the queen
        marked?") names what is asked. The session's last user turn before the correction (in the recent window)
        is searched with it when that turn asked or requested something; after a statement ("staging went down
        again today") the correction states its own fact ("Actually Luna's recheck is now on Monday") and is
        searched alone, as it is with no earlier user turn (C30, stop 35).
        """
        other = asks_other(run.message)
        if not gate.correction and not other:
            run.follow_names = self._follow_up_names(run, gate)
            return run.message
        run.ruled, run.kept = ruled_out(run.message)
        query = drop_negated(run.message)
        if query != run.message:
            run.notes.append(f"correction: searching for {query!r} (what it rules out is left out)")
        before = self._turn_before(run)
        if before is None:
            return query
        if not asks_or_requests(before.lower()):
            run.notes.append(f"correction: searched alone, the turn before it asked nothing ({before!r:.80})")
            return query
        run.notes.append(f"correction: searched with the turn it corrects ({before!r:.80})")
        if other:
            run.other_reply = self._reply_after(run)
        others = frozenset() if run.ruled else other_than(run.message, before)
        if others:
            # "no, I meant the other client" after "what's the Kestrel deadline again?": not Kestrel's
            run.ruled, run.kept = others, asked_for(run.message, others)
            before = " ".join(w for w in before.split() if others.isdisjoint(tokenize(w)))
            run.notes.append(f"correction: asks for another than {', '.join(sorted(others))}, which the "
                             "search leaves out")
        return f"{before} {query}"

    @staticmethod
    def _reply_after(run: _Run) -> Record | None:
        """The session's last assistant turn, when it came after its last user turn (the answer to it), or None."""
        for item in reversed(run.recent):
            rec = item.record
            if rec is None or run.is_message(item):
                continue
            return rec if rec.role == "assistant" else None
        return None

    def _answer_source(self, run: _Run) -> frozenset[str]:
        """The stored turns the last answer drew on, when the message asks for "the other one" (``asks_other``):
        "no, I meant the other plot" after "You put forty cloves of Germidour garlic into bed 1 on plot 14B." That
        is the user's stored turn nearest the answer (cosine), and the assistant turn that followed it (its reply
        then, naming the same thing). The memory search leaves them out, so the other plot's turn can come first
        (stop 47's O1; nu51: "no, I meant the other venue" got the same venue first again); the search looks for a
        turn like the one left out instead (its vector is added to the query's). Empty when the documents answered the
        last turn, when the nearest turn is in the recent window (the search leaves it out already), or when it names
        something the answer did not and other turns of the user do ("Juniper's queen is marked blue, and Clover's is
        marked yellow" answered "blue" only, and Clover has turns of its own: it may hold the other one too)."""
        if run.answer_source is not None:
            return run.answer_source
        run.answer_source = frozenset()
        st, sid, reply = run.st, run.session_id, run.other_reply
        if st is None or sid is None or reply is None or st.corpus_last.get(sid, False):
            return run.answer_source
        with st.lock:
            idx = st.index
            at = idx.pos.get(reply.id)
            users = np.flatnonzero(idx.has_role(np.arange(len(idx)), "user")) if at is not None else np.empty(0, int)
            shown = np.asarray([idx.pos[i.id] for i in run.recent if i.id in idx.pos], dtype=np.int64)
            users = users[~np.isin(users, shown)]  # vectorised: one user may hold 100K turns
            if at is None or not users.size:
                return run.answer_source
            best = int(users[int(np.argmax(idx.embeddings[users] @ idx.embeddings[at]))])
            said = reply.text.casefold()
            unsaid = [n.casefold() for n in names_in(idx.records[best].text) if n.casefold() not in said]
            if unsaid and idx.naming(users[users != best], unsaid).any():
                # it names what the user's other turns name and the answer did not ("Juniper's queen is marked blue,
                # and Clover's is marked yellow"): it may hold the other one too, so it stays (stop 46's U1b lost such
                # turns)
                return run.answer_source
            source = [best]
            after = idx.next_positions(np.asarray([best], dtype=np.int64))
            if after.size and after[0] >= 0 and idx.records[int(after[0])].role == "assistant":
                source.append(int(after[0]))
            run.answer_source = frozenset(idx.records[p].id for p in source)
            run.source_vec = idx.embeddings[best].copy()
            run.notes.append(f"asks for another one: the memory the last answer drew on is left out, and one like it "
                             f"looked for ({idx.records[best].text!r:.80})")
        return run.answer_source

    @staticmethod
    def _turn_before(run: _Run) -> str | None:
        """The session's last user turn before the message (in the recent window), or None."""
        return next((i.record.text for i in reversed(run.recent)
                     if i.record is not None and i.record.role == "user" and not run.is_message(i)), None)

    def _follow_up_names(self, run: _Run, gate: GateDecision) -> str:
        """The names a follow-up that points back takes from the question it follows, for its memory search:
        "Okafor" for "and what's the venue for that one?" right after "when is the Okafor wedding?". Alone, the
        message matched another client's venue (nu51); with the whole question, that question's own answer came
        first (stop 46's F1). The corpus query is left as it was: it has the recent turns already.

        That is: a continuity pattern fired, the message points back (:func:`refers_back`: "that one", "it",
        "they", "there"), names nothing memory knows ("and what's the Patels' venue?" names its own subject), and
        the session's last user turn before it asked or requested something and names something
        (:func:`names_in`). Else "".
        """
        if not any(r.category == "continuity" and r.weight > 0 for r in gate.reasons) or not refers_back(run.message):
            return ""
        before = self._turn_before(run)
        if before is None or not asks_or_requests(before.lower()):
            return ""
        if self._known_anchors(run, self.extractor.extract(run.message)):
            return ""
        names = [n for n in names_in(before) if n.casefold() not in run.message.casefold()]
        run.follow_note = (f"follow-up: memory searched with {', '.join(names)} from the question it follows "
                           f"({before!r:.80})") if names else ""
        return " ".join(names)

    def _state_step(self, run: _Run, include_recent: bool) -> None:
        """Load the user's cached state: pins and the recent window (no search)."""
        t = time.perf_counter()
        try:
            run.st = self._state(run.user_id)
        except StoreError as exc:
            run.notes.append(f"degraded: store unavailable for the user's index ({type(exc).__name__})")
            self.metrics.incr("degraded")
            run.store_down = isinstance(exc, StoreUnavailableError)
        st = run.st
        if st is not None:
            self._write_pending_step(run, st)
            if self._shared_ids() and not run.store_down:
                # Another process may have stored the session's latest turn: the recent window (and a
                # correction's question, a follow-up's topic) must see it on every route, not only after a
                # memory search's probe (helper-92: a reader process's window lagged one turn behind).
                self._probe_shared(st, run.user_id, time.monotonic())
            cached_pins = [p for p in (st.pins or []) if p.session_id in (None, run.session_id)]
            if run.store_down:  # it did not take the waiting turns: not asked again this turn
                run.pins = cached_pins
            else:
                try:
                    with st.lock:
                        run.pins = [p for p in self._load_pins(run.user_id, st)
                                    if p.session_id in (None, run.session_id)]
                except StoreError as exc:
                    run.notes.append(f"degraded: store unavailable for pins ({type(exc).__name__}); cached pins used")
                    self.metrics.incr("degraded")
                    run.store_down = isinstance(exc, StoreUnavailableError)
                    run.pins = cached_pins
            if run.as_of is not None:
                self._as_of_step(run, st)
            if run.session_id is not None:
                run.recent = self._recent(st, run.session_id, run.as_of)
                run.inject_recent = include_recent
                if run.recent and not include_recent:
                    run.notes.append(f"recent window ({len(run.recent)} turns) not injected: the caller sends its "
                                     "own history; those turns are still left out of the memory search")
        run.timings["state"] = (time.perf_counter() - t) * 1e3

    @staticmethod
    def _as_of_step(run: _Run, st: _UserState) -> None:
        """``retrieve(as_of=...)``: leave out the pins made after it, and say what was left out (the turns stored
        after it are left out by each search and by the recent window)."""
        as_of = run.as_of
        assert as_of is not None
        kept = [p for p in run.pins if p.created_at <= as_of]
        pins = len(run.pins) - len(kept)
        run.pins = kept
        with st.lock:
            turns = int(np.count_nonzero(st.index.timestamps > as_of))
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(as_of))
        left = [f"{turns} turn{'s' if turns != 1 else ''} stored after it"] if turns else []
        left += [f"{pins} pin{'s' if pins != 1 else ''} made after it"] if pins else []
        run.notes.append(f"as of {when}: " + (" and ".join(left) + " left out" if left else "nothing stored after it"))

    def _write_pending_step(self, run: _Run, st: _UserState) -> None:
        """Write the turns kept while the store was unavailable before this turn reads; never raises. When the
        store still does not take them, the turn is served from the cached index (which holds them) and the
        steps that can only ask the store are skipped."""
        if not self._has_pending(run.user_id):
            return
        with self._pending_lock:
            waiting = len(self._pending.get(run.user_id, ()))
        try:
            with st.lock, self._snapshots.writing(run.user_id):
                wrote = self._write_pending(run.user_id, st)
        except StoreError as exc:
            run.notes.append(f"degraded: store unavailable ({exc}): {waiting} turns kept in this process wait to "
                             "be written (pending_turns)")
            self.metrics.incr("degraded")
            st.degraded = f"{waiting} turns not yet written: {type(exc).__name__}"
            run.store_down = isinstance(exc, StoreUnavailableError)
            return
        if wrote:
            run.notes.append(f"{wrote} turns kept in this process while the store was unavailable written now")
            # the store took them: it is reachable again (the freshness probe, skipped within _RESYNC_S of the
            # last resync, may not run on this turn to say so; a quick restart left the turn marked degraded)
            st.degraded = None

    def _plan_route(self, run: _Run, gate: GateDecision, forced: Route | None) -> _Plan:
        """Decide the route once: every routing rule lives here.

        1. A route the caller forces is taken as is.
        2. A correction ("no, I meant...") searches memory on its own turn, and
           on the next turn of the session only when that turn continues it
           (the gate found a memory signal in it, even a weak one). Right after
           a turn that brought documents, a correction searches the corpus too
           ("no, I meant the kitchen" after a question on bathroom sockets).
        3. A corpus question naming an anchor the user's memories hold
           ("why did parse_notes() fail?") searches memory too.
        4. A corpus-only route falls back to memory when the corpus finds
           nothing strong (:meth:`_fallback_phase`), so a personal question the
           gate misses is still answered from memory.
        5. With ``RetrievalConfig.memory_probe`` (the default) the fallback's
           lookup runs before the corpus instead (:meth:`_probe_phase`):
           "is it safe to take him for his walk?" needs what memory says about
           him even when a document on walks in the heat is strong.
        6. With no documents at all, "both" is a memory route: the small
           first lookup, not the full top ``k`` of memories.
        7. A memory route whose message asks for advice, rules or what is
           allowed (``asks_advice``: "my flight was 4 hours late, what am I
           owed?") searches both when there are documents
           (``RetrievalConfig.advice_both``).
        8. A memory route that continues the conversation (a continuity
           signal) and asks something, right after a turn that brought
           documents, searches both: "and what's the pitch fee there?" asks
           the documents again ("so she's Noodle now" does not).
        """
        route = gate.route
        st, sid = run.st, run.session_id
        pending = corpus_before = answered_before = False
        if st is not None and sid is not None:
            pending = sid in st.correction_pending
            corpus_before = sid in st.corpus_last
            answered_before = st.corpus_last.get(sid, False)
            st.correction_pending.discard(sid)
            if gate.correction:
                st.correction_pending.add(sid)
        return self._route_rules(run, gate, forced, route, pending, corpus_before, answered_before)

    def _route_rules(self, run: _Run, gate: GateDecision, forced: Route | None, route: Route, pending: bool,
                     corpus_before: bool, answered_before: bool) -> _Plan:
        """The rules listed in :meth:`_plan_route`, given what the session's previous turns left: a correction
        pending (``pending``), whether the last turn brought documents (``corpus_before``) and whether they answered
        it (``answered_before``: a strong passage, or passages alone)."""
        st = run.st
        fired = {r.category for r in gate.reasons if r.weight > 0}
        continues, follows_up = bool(fired & _CONTINUING), "continuity" in fired
        if forced is not None:
            run.notes.append(f"route {forced.value} forced by the caller (the gate said {gate.route.value})")
            return _Plan(route=forced, two_phase=forced is Route.MEMORY, fallback=False, follows_up=follows_up)
        corrected = gate.correction or (pending and continues)
        if corrected:
            if not route.wants_memory:
                route = Route.BOTH if route is Route.CORPUS else Route.MEMORY
            run.notes.append("correction: memory pass forced" + (" (follow-up turn)" if not gate.correction else ""))
            if gate.correction and answered_before and not route.wants_corpus:
                # "no, I meant the kitchen" after a question the documents answered: the documents again
                route = Route.BOTH
                run.notes.append("the corrected turn brought documents: corpus searched too")
        elif pending:
            run.notes.append("correction pending, but this turn does not continue it: no memory pass forced")
        if route is Route.MEMORY and self.retrieval_config.advice_both and asks_advice(run.message) \
                and not run.store_down and not self._no_documents():
            # "my flight was 4 hours late, what am I owed?": the user's facts and a rule the documents hold
            route = Route.BOTH
            run.notes.append("the message asks for advice or rules: the documents too")
        if route is Route.MEMORY and corpus_before and not corrected and not run.store_down and follows_up \
                and asks_or_requests(run.message.lower()) and not self._no_documents():
            # "and what's the pitch fee there?" right after a turn the documents answered: the documents again
            # (a statement there, "she's Noodle now", asks the documents nothing)
            route = Route.BOTH
            run.notes.append("continues a turn the documents answered: the documents too")
        known: tuple[str, ...] = ()
        if route is Route.CORPUS and st is not None:
            run.entities = self.extractor.extract(run.query)
            hits = self._known_anchors(run, run.entities)
            if hits:
                route = Route.BOTH
                known = tuple(hits)
                run.notes.append(f"query names {hits[0]!r} from memory: searching memory too")
        if route is Route.BOTH and not run.store_down and self._no_documents():
            route = Route.MEMORY
            run.notes.append("no corpus documents: 'both' searches memory only, as a memory route")
        # Every corpus-only turn is probed, not only one that fired a memory pattern: "how long does the e-visa
        # take?" fires none though the e-visa is the user's own (benchmarks/data/corpus_context_blind: memory
        # evidence in the prompt +5 of 160, documents unchanged, general questions given a memory 6.8 -> 7.3 %).
        probe = route is Route.CORPUS and st is not None and self.retrieval_config.memory_probe
        return _Plan(route=route, two_phase=route is Route.MEMORY, fallback=route is Route.CORPUS, correction=corrected,
                     probe=probe, follows_up=follows_up, known_names=known if route is Route.BOTH else ())

    @staticmethod
    def _known_anchors(run: _Run, entities: Sequence[Entity]) -> list[str]:
        """The anchor entity keys (names, identifiers...) among ``entities`` that some memory of the user holds."""
        st = run.st
        keys = [e.key for e in entities if e.kind in _ANCHOR_KINDS]
        if st is None or not keys:
            return []
        with st.lock:
            # the message itself does not count when the caller stored it before asking (LlamaIndex's put, then
            # get): its copy in the recent window would name every anchor of the message
            itself = [st.index.pos[i.id] for i in run.recent if i.id in st.index.pos and run.is_message(i)]
            if run.as_of is not None:  # a name only later turns hold is not known as of then
                itself += np.flatnonzero(st.index.timestamps > run.as_of).tolist()
            return st.index.known(keys, exclude=itself)

    def _corpus_size(self) -> int:
        """Documents in the corpus: one count, cached until documents change. Raises StoreError.

        An empty corpus is counted again after ``_EMPTY_CORPUS_RECOUNT_S``: another process sharing the store (an
        app's other workers on one Chroma server, a script beside ``chatrecall mcp``) may add the first documents,
        and a cached 0 skipped every corpus search of this one until it restarted (nu49).
        """
        now = time.monotonic()
        if self._corpus_count is None or (
                self._corpus_count == 0 and now - self._corpus_counted_at >= _EMPTY_CORPUS_RECOUNT_S):
            self._corpus_count = self.store.count(COLLECTION_CORPUS)
            self._corpus_counted_at = now
        return self._corpus_count

    @staticmethod
    def _content_terms(gate: GateDecision, query: str, keep: frozenset[str] = _PERSONAL) -> set[str]:
        """The message's BM25 terms minus the gate's trigger words ("remember", "earlier": in no memory); the words
        of the ``keep`` categories' matches stay (the personal patterns' "my cat")."""
        triggers = {t for r in gate.reasons if r.category not in keep for t in tokenize(r.match)}
        return set(tokenize(query)) - triggers

    def _no_documents(self) -> bool:
        """True when the corpus is known to be empty (False when the store cannot say)."""
        try:
            return self._corpus_size() == 0
        except StoreError:
            return False

    def _memory_phase(self, run: _Run, plan: _Plan, gate: GateDecision) -> None:
        """Search memory; on a memory-only plan, a small lookup under the phase-1 budget first.

        A phase-1 hit that fails the usefulness check is set aside
        (``run.phase1``): the corpus is tried, and the memories are kept only if
        the corpus has nothing. A hit that passes is kept; the documents are
        searched too when it lacks the answer form the message asks for (a clock
        time, opening hours, a price, a day: ``run.form_gap``; passages that state it kept) and,
        with ``RetrievalConfig.corpus_probe``, whenever the message asks or requests something (strong passages
        kept; a statement asks the documents nothing).
        """
        cfg = self.retrieval_config
        if run.store_down and run.st is None:
            run.notes.append("degraded: memory search skipped (store unavailable)")
            return
        # a corpus question that searches memory only because it names something memory knows: the small lookup's
        # few memories, not a full search (every turn naming it, acknowledgements included, came back)
        top = self._phase1_size(run) if plan.two_phase or plan.known_names else run.k
        items = self._run_memory_search(run, top, timeout_ms=cfg.phase1_timeout_ms if plan.two_phase else None)
        self._note_no_memories(run)  # after the search: it may have found turns another process stored (nu49)
        if not plan.two_phase:
            run.memory_items = items
            return
        run.form = form = asked_form(run.query)
        useful = self._useful(items, run.entities, gate, run.query)
        if not useful:
            run.phase1, run.memory_short = items, True
            if not items:
                # a new user's first session: every turn is in the recent window, which the search leaves out
                run.notes.append("no memory outside the recent window: the documents tried")
            return
        run.memory_items = items
        # a statement asks the documents nothing ("so she's Noodle now": a contract matched through its memories)
        statement = cfg.corpus_probe and not asks_or_requests(run.message.lower())
        probe = cfg.corpus_probe and not statement
        gap = form is not None and not self._answers_form(form, items, gate, run.query)
        if not (probe or gap) or run.store_down or self._no_documents():
            why = " (a statement asks the documents nothing)" if statement else ""
            run.notes.append(f"memory useful ({useful}): corpus skipped{why}")
            self.metrics.incr("searches_skipped.memory_useful")
            return
        run.corpus_probe = True
        if gap and form is not None:
            run.form_gap = True
            what = _FORM_WORDS[form]
            run.notes.append(f"memory useful ({useful}) but holds no {what}, which the message asks for: the documents "
                             f"too, {'strong passages and ' if probe else ''}passages that state it kept")
        else:
            run.notes.append(f"memory useful ({useful}): documents searched, strong passages kept")

    @staticmethod
    def _about_message(item: ScoredItem, gate: GateDecision, query: str) -> bool:
        """Whether a memory's score says it is about the message. Where the query asks when or names a period, the
        score holds the time fit, which any memory with a day or a time gets ("Your Wednesday late starts at 12:00."
        for "which day am I on call over Christmas?", helper-92): such a memory must also share one of the
        message's content words (as :meth:`_answers_form` asks)."""
        if item.components.get("time", 0.0) <= 0:
            return True
        return ChatRecall._shares_content(ChatRecall._content_terms(gate, query) - _FORM_TERMS, item.text)

    @staticmethod
    def _shares_content(content: set[str], text: str) -> bool:
        """Whether ``text`` holds one of the message's ``content`` words (any text does when there is none)."""
        return not content or not content.isdisjoint(tokenize(text))

    @staticmethod
    def _answers_form(form: str, items: Sequence[ScoredItem], gate: GateDecision, query: str) -> bool:
        """Whether a memory holds the answer form the message asks for and is about the message: it shares one
        of the message's content words (not the trigger words, not the words that only name the form). A
        message with no such word ("what time is it there?") takes any memory that holds the form."""
        content = ChatRecall._content_terms(gate, query) - _FORM_TERMS
        return any(holds_form(form, i.text) and ChatRecall._shares_content(content, i.text) for i in items)

    def _phase1_size(self, run: _Run) -> int:
        """Memories a small first lookup takes: ``phase1_top_k``, or ``k`` when the caller gave one."""
        return run.k if run.explicit_k else min(self.retrieval_config.phase1_top_k, run.k)

    def _run_memory_search(self, run: _Run, k: int, *, timeout_ms: float | None) -> list[ScoredItem]:
        """One memory search (on the phase-1 pool when it has a time budget); never raises."""
        exclude = frozenset(r.id for r in run.recent) | run.shown | self._answer_source(run)
        pins = [p.text for p in run.pins]  # shown with the result: a turn that only repeats one is not a memory
        assert run.qvec is not None
        query, qvec, entities = run.query, run.qvec, run.entities
        if run.follow_names:  # a follow-up that points back: with the names of the question it follows
            if run.follow_search is None:
                # noted here, where memory is searched with them: a follow-up the gate sends nowhere ("ok, I'll ask
                # Marta to cover it then.") searches nothing and says nothing of it (nu55)
                run.notes.append(run.follow_note)
                text = f"{run.follow_names} {run.query}"
                run.follow_search = (text, self.embedder.embed_query(text), self.extractor.extract(text))
            query, qvec, entities = run.follow_search
        if run.source_vec is not None:  # "the other one": a turn like the one the answer drew on
            qvec = qvec / max(float(np.linalg.norm(qvec)), 1e-12) + run.source_vec
            qvec = qvec / max(float(np.linalg.norm(qvec)), 1e-12)
        t = time.perf_counter()
        items: list[ScoredItem] = []
        try:
            # Cached and fresh: nothing can wait on the store, so the search runs here (the hand-off
            # to the pool thread cost 0.6 ms of a 5 ms retrieve at 10K memories).
            # (a store found down this turn is not asked again: the cached index answers)
            fresh = run.st is not None and (run.store_down or (
                timeout_ms is not None and self._fresh_without_store(run.st, run.user_id)))
            if timeout_ms is None or fresh:
                search = self._search_memory(query, qvec, entities, run.user_id,
                                             strategy=run.strategy, k=k, exclude=exclude, refresh=not fresh,
                                             now=run.now, pins=pins, as_of=run.as_of)
            else:
                fut = self._pool.submit(self._search_memory, query, qvec, entities, run.user_id,
                                        strategy=run.strategy, k=k, exclude=exclude, now=run.now, pins=pins,
                                        as_of=run.as_of)
                try:
                    search = fut.result(timeout=timeout_ms / 1e3)
                except cf.TimeoutError:
                    run.notes.append(f"degraded: memory lookup skipped: over its {timeout_ms:.0f} ms budget")
                    self.metrics.incr("phase1_timeouts")
                    fut.cancel()
                    return []
            items = list(search.items)
            run.rejected.extend(search.rejected)
            run.search = search
            if search.repeating_pins:
                n = search.repeating_pins
                note = (f"{n} stored turn{'s' if n != 1 else ''} left out: {'they repeat' if n != 1 else 'it repeats'}"
                        " a pin, which the context shows")
                if note not in run.notes:  # the second phase finds it again
                    run.notes.append(note)
            self.metrics.incr("searches_run.memory")
        except StoreError as exc:
            run.notes.append(f"degraded: memory store unavailable ({exc})")
            self.metrics.incr("degraded")
            run.store_down = isinstance(exc, StoreUnavailableError)
        finally:
            run.timings["memory"] = run.timings.get("memory", 0.0) + (time.perf_counter() - t) * 1e3
        st = run.st
        if st is not None and st.degraded:
            run.notes.append(f"degraded: served from the cached index ({st.degraded})")
        return items

    def _corpus_phase(self, run: _Run, gate: GateDecision, *, informed: bool = False, recent: bool = True) -> None:
        """Search the corpus (shared documents and the user's own); never raises.

        ``informed``: the turn searches both (or continues the conversation: ``_Plan.follows_up``), so the
        conversation informs the corpus query (:meth:`_corpus_query`), unless the message names what the
        conversation never did (:meth:`_names_elsewhere`); ``recent``: the recent window's user turns among what
        informs it.
        """
        if run.store_down:
            run.notes.append("degraded: corpus search skipped (store unavailable)")
            return
        assert run.qvec is not None
        t = time.perf_counter()
        try:
            if self._corpus_size() == 0:
                run.notes.append("no corpus documents: corpus search skipped")
                self.metrics.incr("searches_skipped.no_corpus")
            else:
                turns, memories = self._informing_texts(run, recent=recent) if informed else ([], [])
                informing = turns + memories
                qvec, context = self._corpus_query(run, turns, memories) if informing else (run.qvec, "")
                run.corpus_items = self._search_corpus(qvec, run.entities, run.user_id, run.k, context=context)
                if informing and (named := self._names_elsewhere(run, gate, informing)):
                    run.named = named
                    run.notes.append(f"corpus query: the message alone (it names {named!r}, which another "
                                     "passage's title holds, and neither what informed the query nor the passage "
                                     "that query found first)")
                    run.corpus_items = self._search_corpus(run.qvec, run.entities, run.user_id, run.k)
                self._drop_weak_passages(run)
                self.metrics.incr("searches_run.corpus")
        except StoreError as exc:
            run.notes.append(f"degraded: corpus store unavailable ({exc})")
            self.metrics.incr("degraded")
            run.store_down = isinstance(exc, StoreUnavailableError)
        run.timings["corpus"] = (time.perf_counter() - t) * 1e3

    def _drop_weak_passages(self, run: _Run) -> None:
        """Reject the passages under ``max(passage_floor, passage_share x the best passage's score)``.

        The corpus search returns up to ``k`` passages over ``relevance_floor``; after the one that answers,
        the rest are mostly the corpus's nearest neighbours on other subjects ("how long do cats usually
        live?" against a lease's pet clause), and a general question the corpus does not cover gets only
        those. They are recorded in ``rejected`` with the cut that dropped them.
        """
        cfg = self.retrieval_config
        items = run.corpus_items
        if not items or (cfg.passage_floor <= 0.0 and cfg.passage_share <= 0.0):
            return
        best = max(i.score for i in items)
        cut = max(cfg.passage_floor, cfg.passage_share * best)
        if all(i.score >= cut for i in items):
            return
        run.corpus_items = [i for i in items if i.score >= cut]
        rule = f"passage_floor {cfg.passage_floor}, passage_share {cfg.passage_share} x the best {best:.2f}"
        run.rejected.extend(dataclasses.replace(i, why=f"passage score {i.score:.2f} < {cut:.2f} ({rule})")
                            for i in items if i.score < cut)

    def _informing_texts(self, run: _Run, *, recent: bool = True) -> tuple[list[str], list[str]]:
        """What the conversation says about the message's subject, to inform its corpus query
        (:meth:`_corpus_query`): the recent window's user turns (when ``corpus_recent_context`` and ``recent``),
        and the top ``corpus_memory_items`` memories found."""
        cfg = self.retrieval_config
        turns = [i.text for i in run.recent if i.record is not None and i.record.role == "user"] \
            if cfg.corpus_recent_context and recent else []
        return turns, [i.text for i in run.memory_items[:cfg.corpus_memory_items]]

    @staticmethod
    def _names_elsewhere(run: _Run, gate: GateDecision, informing: Sequence[str]) -> str | None:
        """A word of the message that names another subject than the conversation's, or None.

        "What does the bathroom quote come to in total?" when the memories that informed the corpus query are all
        about the electrician's quote (nu48): the informed query finds the rewire quote first, and the bathroom
        quote, which the message names, is left out as not strong. Such a word (a content word of the message,
        not a trigger or answer-form word) is in no informing text and not in the first passage found (its text
        or title), but the title of another passage found holds it ("AquaFlow Plumbing - bathroom refit
        quote"): the message names what it is about, and the conversation would pull the query away from it.
        Titles only: in a passage's text, the other words of an elliptical question ("what should my class watch
        out for in the practical?") are everywhere (stop 45's first version, with texts too, cost the implied
        questions of ``benchmarks/data/corpus_context_blind`` hit@1 0.577 -> 0.256).
        """
        items = run.corpus_items
        if len(items) < 2:
            return None
        said: set[str] = set()
        for text in informing:
            said.update(tokenize(text))
        words = ChatRecall._content_terms(gate, run.query, _NAMING_CATEGORIES) - _FORM_TERMS - said
        if not words:
            return None
        first = max(items, key=lambda i: i.score)
        words -= set(tokenize(first.text)) | ChatRecall._title_terms(first)
        titled = sorted({w for i in items if i is not first for w in ChatRecall._title_terms(i) & words})
        return titled[0] if titled else None

    @staticmethod
    def _names_title(message: str, item: ScoredItem) -> bool:
        """Whether ``message`` names the passage's document: two words next to each other in its title (stop words
        and numbers aside) are next to each other in the message too ("my price list" for "2026 Price List", "my
        tenancy agreement" for "Tenancy Agreement - 14 Elm Road"; not "quote" alone for "Kitchen Quote")."""
        return bool(item.title) and not _word_pairs(item.title or "").isdisjoint(_word_pairs(message))

    @staticmethod
    def _title_terms(item: ScoredItem) -> set[str]:
        """The index terms of a passage's document title (none without one)."""
        title = item.title
        return set(tokenize(title)) if title else set()

    def _corpus_query(self, run: _Run, turns: Sequence[str], memories: Sequence[str]) -> tuple[np.ndarray, str]:
        """The corpus query vector of a turn that searches both, or continues the conversation ("and where is
        it held?"): the message's, with what the conversation says about its subject appended.

        "what should my class watch out for in the practical?" never says which practical; the
        conversation does ("the titration practical with my year 11s on Friday"), either earlier in this
        session (the user's turns of the recent window, when ``corpus_recent_context``) or in the past (the
        top ``corpus_memory_items`` memories found). The message and those texts are embedded together (one
        more query embedding); with neither, the message alone. Memories set aside by the two-phase check
        (``run.phase1``: not clearly useful) inform nothing (letting them did not help on
        ``benchmarks/data/corpus_context`` with the gate's own routes: MRR 0.748 with them, 0.755 without).

        Args:
            run: The turn.
            turns: Its recent user turns (:meth:`_informing_texts`).
            memories: Its top memories' texts.

        Returns:
            (query vector, "" or what informed it, for the items' ``why``).
        """
        assert run.qvec is not None
        t = time.perf_counter()
        qvec = self.embedder.embed_query(" ".join([run.query, *turns, *memories]))
        run.timings["embed"] = run.timings.get("embed", 0.0) + (time.perf_counter() - t) * 1e3
        parts = ([f"{len(turns)} recent turn{'s' if len(turns) > 1 else ''}"] if turns else []) + (
            [f"its top {len(memories)} memor{'y' if len(memories) == 1 else 'ies'}"] if memories else [])
        run.notes.append("corpus query: the message plus " + " and ".join(parts))
        return qvec, "with memory context"

    def _strong_corpus(self, items: Sequence[ScoredItem]) -> bool:
        return any(i.score >= self.retrieval_config.strong_corpus_score for i in items)

    def _fallback_phase(self, run: _Run, gate: GateDecision) -> None:
        """The corpus found nothing strong for a corpus-only plan: look in memory before giving up.

        Memories are kept only when they pass the usefulness check: a general
        question with no documents to answer it gets no unrelated memories.
        """
        self.metrics.incr("fallbacks.memory")
        useful = self._keep_useful(run, gate, timeout_ms=None, why="fallback: not useful")
        if useful:
            run.notes.append(f"corpus found nothing strong; memory useful ({useful}): memory used")

    def _probe_phase(self, run: _Run, gate: GateDecision) -> None:
        """A corpus-only turn: the memory fallback's lookup, before the corpus.

        The same small lookup and usefulness check as :meth:`_fallback_phase`, under the phase-1 latency
        budget (``phase1_timeout_ms``: it runs before the corpus on every such turn, so a store that is slow
        to load an uncached user must not hold the corpus answer back); memories that pass are kept (and
        inform the corpus query), and the fallback does not run again after the corpus.
        """
        self.metrics.incr("probes.memory")
        useful = self._keep_useful(run, gate, timeout_ms=self.retrieval_config.phase1_timeout_ms,
                                   why="probe: not useful")
        signs = ", ".join(dict.fromkeys(repr(r.match) for r in gate.reasons if r.weight > 0
                                        and r.category in _MEMORY_SIGNS))
        head = "memory looked at before the corpus" + (f" (the message mentions {signs})" if signs else "")
        run.notes.append(f"{head}: useful ({useful}), memory used" if useful else f"{head}: nothing useful")

    @staticmethod
    def _note_no_memories(run: _Run) -> None:
        """Say so when the user has no memories: "--user Rhiannon" for a user stored as "rhiannon", or the right
        user in another namespace, found nothing, and nothing said why (helper-92, helper-94)."""
        if run.st is None or len(run.st.index) > 0:
            return
        note = (f"user_id {run.user_id!r} has no stored memories yet (ids are exact: 'Alice' and 'alice' are two "
                "users; and each namespace is a store of its own)")
        if note not in run.notes:  # the memory phase and the probe / fallback may both look
            run.notes.append(note)

    def _keep_useful(self, run: _Run, gate: GateDecision, *, timeout_ms: float | None, why: str) -> str | None:
        """The small lookup of the fallback and the probe: memories that pass the usefulness check become the
        turn's memories, the others are rejected with ``why``. Returns the check's reason, or None."""
        items = self._run_memory_search(run, self._phase1_size(run), timeout_ms=timeout_ms)
        self._note_no_memories(run)
        useful = self._useful(items, run.entities, gate, run.query)
        if useful:
            run.memory_items = items
        else:
            run.rejected.extend(dataclasses.replace(i, why=why) for i in items)
        return useful

    def _settle_corpus_probe(self, run: _Run, gate: GateDecision) -> None:
        """A memory turn that searched the documents although its memories were useful keeps the passages that
        state the answer form the memories lacked (a clock time, opening hours, a price...) and, with the probe, the
        strong ones: the memories answer, a document joins them only when it clearly bears on the question. With
        the probe, the best passage is also kept when it holds a word of the message that no memory kept holds
        (:meth:`_lacked_words`)."""
        if not run.corpus_probe or not run.corpus_items:
            return
        cfg = self.retrieval_config
        form = run.form if run.form_gap else None
        if form is None:
            why = "memory useful, passage not strong"
        else:
            why = ("not strong and " if cfg.corpus_probe else "") + f"holds no {_FORM_WORDS[form]}"
        best = max(run.corpus_items, key=lambda i: i.score)
        keep = []
        for item in run.corpus_items:
            if (cfg.corpus_probe and item.score >= cfg.strong_corpus_score) \
                    or (form is not None and holds_form(form, item.text)):
                keep.append(item)
            elif cfg.corpus_probe and item is best \
                    and (words := sorted(self._lacked_words(run, gate) & set(tokenize(item.text)))):
                keep.append(item)
                run.notes.append(f"the best passage kept: it holds {', '.join(map(repr, words))} of the message, "
                                 "which the conversation never used")
            elif cfg.corpus_probe and self._names_title(run.message, item):
                # nu51: "what's in my price list for the full-day package?" with useful memories about quotes: the
                # message names the document ("2026 Price List")
                keep.append(item)
                run.notes.append(f"a passage kept: the message names its document ({item.title!r})")
            elif cfg.corpus_probe and item is best and run.named is not None \
                    and run.named in self._title_terms(item):
                # nu48: "What does the bathroom quote come to in total?" with memories all about the rewire quote:
                # the message names the document, the memories answer another question
                keep.append(item)
                run.notes.append(f"the best passage kept: its title names {run.named!r}, as the message does and "
                                 "no memory found does")
            else:
                run.rejected.append(dataclasses.replace(item, why=why))
        run.corpus_items = keep
        if not keep:
            run.notes.append("no passage kept: memory only")

    @staticmethod
    def _lacked_words(run: _Run, gate: GateDecision) -> set[str]:
        """The message's content words (not its trigger or answer-form words) that the conversation never used, so
        no memory found holds them either: "worktop" in "what's the worktop spec in the kitchen quote?" when memory
        only holds the plumber's quote (helper-96: the bot's replies about the quote passed the usefulness check and
        the kitchen quote was skipped); not "work" in "when does Tom start work?", said before."""
        content = ChatRecall._content_terms(gate, run.query, _NAMING_CATEGORIES) - _FORM_TERMS
        if not content or run.st is None:
            return content
        with run.st.lock:
            return {t for t in content if not run.st.index.holds_term(t)}

    @staticmethod
    def _drop_ruled_out(run: _Run) -> None:
        """A correction's ruled-out words keep out what names them: after "no, I meant the other one, Kirkstall, not
        Hartley's", a memory or passage naming Hartley's is rejected unless it names every word the correction asks
        for (Kirkstall) too; "the other client" after a question naming Kestrel rules Kestrel out the same way
        (``run.ruled`` / ``run.kept``, set by :meth:`_search_text`). The search text already leaves the ruled-out
        part out; the items found may still be about it."""
        ruled, kept = run.ruled, run.kept
        if not ruled:
            return

        def allowed(item: ScoredItem) -> bool:
            terms = set(tokenize(item.text))
            if terms & ruled and not (kept and kept <= terms):
                run.rejected.append(dataclasses.replace(item, why=f"the correction rules out {min(terms & ruled)!r}"))
                return False
            return True

        before = len(run.rejected)
        run.memory_items = [i for i in run.memory_items if allowed(i)]
        run.corpus_items = [i for i in run.corpus_items if allowed(i)]
        if len(run.rejected) > before:
            run.notes.append(f"correction: {len(run.rejected) - before} item(s) naming what it rules out "
                             f"({', '.join(sorted(ruled))}) left out")

    @staticmethod
    def _drop_shown_documents(run: _Run) -> None:
        """A correction asking for "the other ..." that names nothing to rule out ("no, I meant the other market, the
        Sunday one" after "what time do I need to be set up at the market?") rules out where the answer came from: the
        passages of the documents the session's previous turn got are rejected unless they hold every word the
        correction asks for ("Sunday"). nu45 (stop 43) got the same market's rules first again."""
        st, sid = run.st, run.session_id
        if run.ruled or st is None or sid is None or not run.corpus_items or not asks_other(run.message):
            return
        shown = set(st.corpus_docs.get(sid, ()))
        if not shown:
            return
        wanted = asked_for(run.message, frozenset())
        kept: list[ScoredItem] = []
        for item in run.corpus_items:
            doc = item.record.session_id if item.record is not None else None
            if doc in shown and not (wanted and wanted <= set(tokenize(item.text))):
                title = item.record.metadata.get("title") if item.record is not None else None
                run.rejected.append(dataclasses.replace(
                    item, why=f"the correction asks for another than what the corrected turn got ({title or doc!r})"))
            else:
                kept.append(item)
        if len(kept) < len(run.corpus_items):
            run.notes.append(f"correction: asks for another one: {len(run.corpus_items) - len(kept)} passage(s) of the "
                             "documents the corrected turn got left out")
            run.corpus_items = kept

    def _settle_phase1(self, run: _Run, plan: _Plan) -> None:
        """Drop the set-aside phase-1 memories only for a strong corpus hit.

        The route asked for memory; the corpus was only tried because the small
        lookup did not clearly answer. A weak document ("which machine do we
        have?" against an espresso guide) must not replace the memories, and a
        correction ("no, I meant the dog's breed") is about the conversation,
        whatever the corpus holds. A lookup that found no memory at all (a first session, all of it in the recent
        window) is settled the same way, with nothing to keep from memory.
        """
        if not run.memory_short:
            return
        strong = self._strong_corpus(run.corpus_items)
        memory = "memory not clearly useful" if run.phase1 else "no memory found"
        if plan.correction:
            run.notes.append(f"{memory}, but the turn corrects the conversation: kept")
            run.memory_items = run.phase1
            if not strong:
                run.rejected.extend(dataclasses.replace(i, why="correction: corpus not strong") for i in run.corpus_items)
                run.corpus_items = []
        elif strong:
            run.notes.append("memory not useful: dropped for a strong corpus hit" if run.phase1
                             else "no memory found: the strong corpus hit kept")
            run.rejected.extend(dataclasses.replace(i, why="phase 1: not useful") for i in run.phase1)
        else:
            why = "the corpus found no passage" if not run.corpus_items else "the corpus found nothing strong"
            if run.phase1:
                run.notes.append(f"memory not clearly useful, but {why}: kept")
            run.memory_items = run.phase1
            # "what time do we open on Sunday?": the best passage that states the asked form stays, weak or not;
            # else the best passage: the memories were not useful either (helper-92 / helper-94: a 0.39 passage
            # that answered was dropped for memories that did not)
            form = run.form
            best = None
            if form is not None:
                best = next((i for i in run.corpus_items if holds_form(form, i.text)), None)
                if best is not None:
                    run.notes.append(f"the best passage stating the {_FORM_WORDS[form]} asked for: kept")
            if best is None and run.corpus_items:
                best = run.corpus_items[0]
                run.notes.append("the best passage: kept, the memories were not clearly useful either" if run.phase1
                                 else "the best passage: kept (not strong), no memory found")
            run.rejected.extend(dataclasses.replace(i, why="phase 2: corpus not strong, memory kept")
                                for i in run.corpus_items if i is not best)
            run.corpus_items = [best] if best is not None else []
        run.phase1 = []

    def _assemble(self, run: _Run, gate: GateDecision, plan: _Plan, budget_tokens: int | None) -> RetrievalResult:
        """Fit pins, the recent window and the found items into the budget; record metrics."""
        cfg = self.retrieval_config
        t = time.perf_counter()
        budget = budget_tokens if budget_tokens is not None else budget_for(
            run.message, run.entities, plan.route, self.budget_config)
        recent = run.recent if run.inject_recent else ()
        fixed = sum(p.tokens for p in run.pins) + sum(r.tokens for r in recent)
        found = self._mix(run.memory_items[:run.k], run.corpus_items[:run.k])
        kept = self._best_memory_under_min_score(run, plan, gate, found)
        weak = [i for i in found if i.score < cfg.min_score and i is not kept]
        run.rejected.extend(dataclasses.replace(i, why=f"score {i.score:.2f} < min_score {cfg.min_score}")
                            for i in weak)
        strong = [i for i in found if i.score >= cfg.min_score or i is kept]
        sel = select_items(strong, budget=max(budget - fixed, 0), config=self.budget_config,
                           diversity_threshold=cfg.diversity_threshold, in_order=True)
        run.rejected.extend(sel.rejected)
        selected, repeats = trim_overlaps(sel.selected, self.token_counter.count)
        run.rejected.extend(repeats)
        used = fixed + sum(i.tokens for i in selected)
        context = format_context(run.pins, recent, selected, now=run.now)
        run.timings["select"] = (time.perf_counter() - t) * 1e3
        run.timings["total"] = (time.perf_counter() - run.t_start) * 1e3

        final_route = self._route_taken(selected, plan.route)
        m = self.metrics
        m.incr(f"routes.gate.{gate.route.value}")
        m.incr(f"routes.taken.{final_route.value}")
        m.observe("tokens_injected", used)
        for phase, ms in run.timings.items():
            m.observe(f"latency_ms.{phase}", ms)
        m.turn(f"{run.user_id}/{run.session_id or '-'}", tokens=used, searches=int(plan.route is not Route.NONE))
        search = run.search
        return RetrievalResult(
            message=run.message, gate=gate, route=final_route,
            strategy=search.strategy if search else None, query_type=search.query_type if search else None,
            items=tuple(selected), recent=recent, pins=tuple(run.pins), rejected=tuple(run.rejected),
            tokens_used=used, tokens_left=max(budget - used, 0), timings_ms=run.timings, notes=tuple(run.notes),
            context=context, at=run.now,
        )

    def _best_memory_under_min_score(self, run: _Run, plan: _Plan, gate: GateDecision,
                                     found: Sequence[ScoredItem]) -> ScoredItem | None:
        """The best memory, when the route asked for memory, the message asks for something and no memory
        reaches ``min_score``; else None.

        A new user's few memories score low on every question ("which orchestrator do we use?" against
        "our pipeline runs on Airflow 2.9": 0.149); the route asked for memory, so its best candidate is
        kept rather than nothing. A statement asks for nothing ("Our dog Pepper is staying with Tom's mum
        while the work's on.", nu48: its best memory scored 0.087): unless it says it recalls ("I forgot the
        vet's name", a recall, explicit, temporal or continuity signal), nothing under ``min_score`` is kept.
        """
        if not plan.route.wants_memory:
            return None
        if not asks_or_requests(run.message.lower()) and not any(
                r.weight > 0 and r.category in _CONTINUING for r in gate.reasons):
            return None
        mem = [i for i in found if i.source == "memory"]
        if not mem or any(i.score >= self.retrieval_config.min_score for i in mem):
            return None
        best = max(mem, key=lambda i: i.score)
        run.notes.append(f"the best memory kept under min_score ({best.score:.3f}): the route asked for memory")
        return best

    def _mix(self, memories: Sequence[ScoredItem], passages: Sequence[ScoredItem]) -> list[ScoredItem]:
        """The order in which memories and passages claim the budget (``BudgetConfig.mix``).

        ``alternate``: each source best first, taking turns (memory first), because their scores are on
        different scales (a fused memory score of 0.2 can be the one turn that says whose court case it
        is; a passage's 0.8 x cosine is often 0.4); ``score``: by raw score.
        """
        if self.budget_config.mix == "score" or not memories or not passages:
            return sorted([*memories, *passages], key=lambda i: -i.score)
        mem = sorted(memories, key=lambda i: -i.score)
        doc = sorted(passages, key=lambda i: -i.score)
        out: list[ScoredItem] = []
        for a, b in itertools.zip_longest(mem, doc):
            out.extend(x for x in (a, b) if x is not None)
        return out

    @staticmethod
    def _route_taken(items: Sequence[ScoredItem], planned: Route) -> Route:
        if planned is Route.NONE:
            return Route.NONE
        mem = any(i.source == "memory" for i in items)
        cor = any(i.source == "corpus" for i in items)
        if mem and cor:
            return Route.BOTH
        if cor:
            return Route.CORPUS
        if mem:
            return Route.MEMORY
        return planned

    # ================================================================ memories by id
    @_open_only
    @keywords_checked
    def upsert(
        self,
        memory_id: str,
        text: str,
        *,
        user_id: str,
        session_id: str,
        role: str = "user",
        timestamp: float | Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Record:
        """Store or replace one memory under a caller-chosen id (for key-value adapters).

        Unlike :meth:`add`, whose ids derive from the text, the id is the
        caller's: storing a new text under the same id replaces the old one,
        in the store and in the index.

        Example:
            >>> from chatrecall.testing import fake_engine
            >>> cr = fake_engine()
            >>> cr.upsert("prefs-1", "Prefers dark mode", user_id="u1", session_id="prefs").id
            'prefs-1'

        Raises:
            InvalidInputError: A value is invalid, or ``memory_id`` is already
                taken by another user's memory (choose another id).
            StoreError: The store failed; the index is unchanged.
        """
        check_id("memory_id", memory_id, self.limits)
        turn = self._make_turn(Turn(text=text, user_id=user_id, session_id=session_id, role=role,
                                    timestamp=timestamp, metadata=metadata))  # type: ignore[arg-type]
        st = self._state(user_id)
        with st.lock:
            old = self.store.get(COLLECTION_MEMORIES, ids=[memory_id]).records
            if old and old[0].user_id != user_id:
                raise InvalidInputError(
                    f"memory_id={memory_id!r} is taken by another user's memory: choose another id"
                )
            if old and old[0].session_id == turn.session_id:
                seq = old[0].seq
            else:
                seq = len(st.index.session_positions(turn.session_id))
            keys = tuple(dict.fromkeys(e.key for e in self.extractor.extract(turn.text)))
            rec = Record(id=memory_id, text=turn.text, user_id=user_id, session_id=turn.session_id, role=turn.role,
                         timestamp=turn.timestamp if turn.timestamp is not None else self._clock(), seq=seq,
                         entities=keys, metadata=turn.metadata)
            emb, parts, stored = self._embed_memories([rec])
            with self._snapshots.writing(user_id):  # same id, new text: the version change makes snapshots stale
                self._write_pending(user_id, st)  # turns kept from an outage go first
                self.store.upsert(COLLECTION_MEMORIES, stored, emb)
                if memory_id in st.index:
                    st.index.remove([memory_id])
                st.index.add([rec], emb, parts)
        self.metrics.incr("memories_stored")
        return rec

    @_open_only
    @keywords_checked
    def get_memories(
        self, user_id: str, *, ids: Sequence[str] | None = None, session_id: str | None = None
    ) -> list[Record]:
        """A user's stored memories by id and/or session, oldest first (read from the store).

        Ids of other users' memories are simply not returned.

        Raises:
            InvalidInputError: ``user_id``, ``session_id`` or an id is invalid.
        """
        check_id("user_id", user_id, self.limits)
        where: dict[str, Any] = {"user_id": user_id}
        if session_id is not None:
            where["session_id"] = check_id("session_id", session_id, self.limits)
        if ids is not None:
            if isinstance(ids, str) or not isinstance(ids, Sequence):
                raise InvalidInputError(f"ids must be a list of ids, got {type(ids).__name__}: {ids!r:.60}")
            ids = [check_id(f"ids[{n}]", i, self.limits) for n, i in enumerate(ids)]
            if not ids:
                return []
        batch = self.store.get(COLLECTION_MEMORIES, ids=ids, where=where)
        return sorted(map(without_parts, batch.records), key=lambda r: (r.timestamp, r.seq, r.id))

    @_open_only
    @keywords_checked
    def delete_memories(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete some of a user's memories by id; returns how many were deleted.

        Ids of other users' memories are never deleted (they count as not found).

        Raises:
            InvalidInputError: ``user_id`` or an id is invalid.
            StoreError: The store failed.
        """
        check_id("user_id", user_id, self.limits)
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise InvalidInputError(f"ids must be a list of ids, got {type(ids).__name__}: {ids!r:.60}")
        ids = [check_id(f"ids[{n}]", i, self.limits) for n, i in enumerate(ids)]
        if not ids:
            return 0
        st = self._state(user_id)
        with st.lock, self._snapshots.writing(user_id):
            n = self.store.delete(COLLECTION_MEMORIES, ids=ids, where={"user_id": user_id})
            n += self._drop_pending(user_id, ids=set(ids))  # never written later
            st.index.remove(ids)
        self.metrics.incr("memories_deleted", n)
        return n

    @_open_only
    @keywords_checked
    def list_sessions(self, user_id: str | None = None, *, role: str | None = None) -> list[tuple[str, str]]:
        """Distinct ``(user_id, session_id)`` pairs that have stored memories, sorted.

        Args:
            user_id: Only this user's sessions (default: every user's; an
                operator's view, never hand it to one user).
            role: Only sessions holding memories of this role.

        Raises:
            InvalidInputError: ``user_id`` or ``role`` is invalid.
        """
        where: dict[str, Any] = {}
        if user_id is not None:
            where["user_id"] = check_id("user_id", user_id, self.limits)
        if role is not None:
            where["role"] = check_id("role", role, self.limits)
        batch = self.store.get(COLLECTION_MEMORIES, where=where or None)
        return sorted({(r.user_id, r.session_id) for r in batch.records})

    def stats(self) -> dict[str, Any]:
        """Metrics as a plain dict (counters, latency p50/p95, per conversation and day)."""
        return self.metrics.snapshot()

    @property
    def gate(self) -> Gate:
        """The retrieval gate (built on first use from the config given at construction; engines of one
        process with the default config share one)."""
        g = self._gate
        if g is None:
            with self._gate_lock:
                if self._gate is None:
                    self._gate = _default_gate() if self._gate_config == _default_gate_config() \
                        else Gate(self._gate_config)
                g = self._gate
        return g

    @_open_only
    @keywords_checked
    def warm(self, *, background: bool = False) -> threading.Thread | None:
        """Build the gate, compile all its regexes and load the embedding model now, not on the first messages.

        A process's first gate takes about 0.4 s to build on a 2-core machine (later ones 0.03 s) and compiles each word's
        regex the first time a message needs it, and the model loads on the first embedding (a new
        process's first turns paid about 0.3 s each). :func:`chatrecall.connect` calls this in the background; the default gate is built
        once per process.

        Args:
            background: Do it in a daemon thread and return the thread (a message routed meanwhile
                waits for the gate, never builds a second one).
        """
        if background:
            t = threading.Thread(target=self._warm_quietly, name="chatrecall-warm", daemon=True)
            _track_warm_thread(t)
            t.start()
            return t
        self._warm_now()
        return None

    def _warm_now(self) -> None:
        # in the order a first turn needs them: the gate, the model, then the rest of the gate's regexes
        gate = self.gate
        warm = getattr(self.embedder, "warm", None)  # an Embedder may offer it (the bundled one does)
        if callable(warm):
            warm()
        gate.warm()

    def _warm_quietly(self) -> None:
        try:
            self._warm_now()
        except Exception as exc:  # a background warm-up must never break the app; the first message retries
            warnings.warn(f"chatrecall: background warm-up failed ({type(exc).__name__}: {exc})",
                          RuntimeWarning, stacklevel=1)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called: the methods that use the store then raise :class:`ClosedError`."""
        return self._closed

    def close(self) -> None:
        """Stop background threads, snapshot changed large users and close the store if this engine opened it
        (``chatrecall.connect``: an embedded Chroma directory is then released; a store you passed in stays open,
        yours to close).

        Closing twice does nothing more. Afterwards every method that reads or writes the store raises
        :class:`ClosedError`; :meth:`decide` (the gate alone) still answers.
        """
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._write_pending_on_close()
        with self._users_lock:
            cached = list(self._users.items())
        for user_id, st in cached:
            if self._has_pending(user_id):
                continue  # its index holds turns the store lacks: no snapshot of it
            with st.lock:
                self._snapshots.save(user_id, st.index)
        owned, self._owned_store = self._owned_store, None
        if owned is not None:
            owned.close()

    def _write_pending_on_close(self) -> None:
        """Last chance for the turns kept while the store was unavailable: one try (stopping at the first user the
        store does not take), then a warning naming how many are lost."""
        with self._pending_lock:
            users = list(self._pending)
        for user_id in users:
            try:
                st = self._state(user_id)  # an uncached user is loaded: its turns already stored are not rewritten
                with st.lock, self._snapshots.writing(user_id):
                    self._write_pending(user_id, st)
            except StoreError:
                break
        left = self.pending_turns()
        if left:
            _log.warning("chatrecall: closed with %d turn(s) the store never took (it was unavailable): they are "
                         "lost", left)

    def __enter__(self) -> ChatRecall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_WARMING: set[threading.Thread] = set()
_WARMING_LOCK = threading.Lock()


def _track_warm_thread(t: threading.Thread) -> None:
    """Remember a warm-up thread, so that the interpreter's exit waits for it: a daemon thread killed while
    it is inside ONNX Runtime or PyTorch native code aborts the process ("terminate called without an
    active exception", exit code 134), seen in a script that exited while the model was loading."""
    with _WARMING_LOCK:
        _WARMING.difference_update([x for x in _WARMING if not x.is_alive()])
        _WARMING.add(t)


def _join_warm_threads(timeout_s: float = 120.0) -> None:
    with _WARMING_LOCK:
        threads = list(_WARMING)
        _WARMING.clear()
    for t in threads:
        t.join(timeout_s)


atexit.register(_join_warm_threads)  # runs before the interpreter stops daemon threads


_DEFAULTS_LOCK = threading.Lock()
_DEFAULT_GATE: list[Gate] = []
_DEFAULT_GATE_CONFIG: list[GateConfig] = []


def _default_gate_config() -> GateConfig:
    with _DEFAULTS_LOCK:
        if not _DEFAULT_GATE_CONFIG:
            _DEFAULT_GATE_CONFIG.append(GateConfig())
        return _DEFAULT_GATE_CONFIG[0]


def _default_gate() -> Gate:
    """The process's gate of the default config, shared by every engine that uses it (it is thread-safe)."""
    with _DEFAULTS_LOCK:
        if not _DEFAULT_GATE:
            _DEFAULT_GATE.append(Gate())
        return _DEFAULT_GATE[0]
