"""The chatrecall engine: write path, gate, two-phase hybrid retrieval, budget, pins."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ._budget import budget_for, select_items, tier_of
from ._classifier import STRATEGY_FOR, TimeCue, classify_query, time_cue
from ._config import BudgetConfig, PinConfig, RetrievalConfig, StoreLimits
from ._entities import RegexEntityExtractor
from ._errors import (
    ConfigError,
    InvalidInputError,
    NotFoundError,
    PinLimitError,
    StoreError,
    StoreUnavailableError,
)
from ._format import chunk_text, format_context
from ._gate import Gate, GateConfig
from ._index import UserIndex, tokenize
from ._metrics import Metrics
from ._protocols import Embedder, EntityExtractor, MemoryStore, TokenCounter
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
from ._validate import check_id, check_metadata, check_strategy, check_text, check_timestamp

__all__ = ["ChatRecall"]

_COMPONENTS = ("recency", "relevance", "keyword", "entity", "graph")
_ANCHOR_KINDS = frozenset({"identifier", "path", "error", "quoted", "name"})
#: Components scored on a turn alone; ``graph`` is computed from them.
_BASE = ("recency", "relevance", "keyword", "entity")
#: Strategies whose time component follows the query's time cues ("when", "two weeks ago").
_TIME_AWARE = frozenset({Strategy.HYBRID, Strategy.GRAPH, Strategy.ENTITY})
#: Weight of the time fit, as a share of relevance + keyword, when a query names a time.
_TIME_SHARE = 0.15
#: Decay of a neighbour's support per hop beyond the first.
_HOP_DECAY = 0.5
#: Store queries slower than this (ms, moving average over at least _FRESH_MIN_PROBES
#: searches) stop being asked on every search.
_FRESH_MS = 2.0
_FRESH_MIN_PROBES = 3

#: Fixed weight presets of the single strategies (hybrid uses the config weights).
_PRESETS: dict[Strategy, dict[str, float]] = {
    Strategy.RECENCY: {"recency": 0.6, "relevance": 0.3, "keyword": 0.1},
    Strategy.RELEVANCE: {"relevance": 1.0},
    Strategy.KEYWORD: {"keyword": 1.0},
    Strategy.ENTITY: {"entity": 0.5, "relevance": 0.3, "graph": 0.2},
    Strategy.GRAPH: {"relevance": 0.5, "graph": 0.3, "keyword": 0.2},
}


def _hash_id(*parts: str) -> str:
    h = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return h[:32]


def _topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first (argpartition, then sort only k)."""
    if scores.size == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, scores.size)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


def _topk_nonzero(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the (at most) k largest non-zero scores, best first; sparse-friendly."""
    nz = np.flatnonzero(scores)
    if nz.size == 0:
        return nz.astype(np.int64)
    return nz[_topk(scores[nz], k)].astype(np.int64)


@dataclasses.dataclass
class _UserState:
    index: UserIndex
    lock: threading.RLock = dataclasses.field(default_factory=threading.RLock)
    pins: list[Pin] | None = None
    pins_loaded_at: float = 0.0
    synced_at: float = 0.0
    correction_pending: set[str] = dataclasses.field(default_factory=set)


@dataclasses.dataclass(frozen=True, slots=True)
class _Search:
    items: tuple[ScoredItem, ...]
    rejected: tuple[ScoredItem, ...]
    strategy: Strategy
    query_type: QueryType


class ChatRecall:
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
    """

    def __init__(
        self,
        *,
        store: MemoryStore,
        embedder: Embedder,
        token_counter: Any = None,
        entity_extractor: EntityExtractor | None = None,
        gate: Gate | GateConfig | None = None,
        retrieval: RetrievalConfig | None = None,
        budget: BudgetConfig | None = None,
        pins: PinConfig | None = None,
        limits: StoreLimits | None = None,
        max_cached_users: int = 256,
        sync_interval_s: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if store is None or not isinstance(store, MemoryStore):
            raise ConfigError(f"store={store!r} is invalid: pass a MemoryStore (e.g. chatrecall.open() builds one)")
        if embedder is None or not isinstance(embedder, Embedder):
            raise ConfigError(f"embedder={embedder!r} is invalid: pass an Embedder")
        if not isinstance(max_cached_users, int) or max_cached_users < 1:
            raise ConfigError(f"max_cached_users={max_cached_users!r} is invalid: must be an int >= 1")
        self.store = store
        self.embedder = embedder
        self.token_counter: TokenCounter = as_token_counter(token_counter)
        self.extractor: EntityExtractor = entity_extractor or RegexEntityExtractor()
        self.gate = gate if isinstance(gate, Gate) else Gate(gate)
        self.retrieval_config = retrieval or RetrievalConfig()
        self.budget_config = budget or BudgetConfig()
        self.pin_config = pins or PinConfig()
        self.limits = limits or StoreLimits()
        self.metrics = Metrics()
        self._clock = clock
        self._max_users = max_cached_users
        self._sync_interval = sync_interval_s
        self._users: OrderedDict[str, _UserState] = OrderedDict()
        self._users_lock = threading.Lock()
        self._pool = cf.ThreadPoolExecutor(max_workers=4, thread_name_prefix="chatrecall-phase1")
        self._corpus_count: int | None = None
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
            fresh = _UserState(UserIndex(self.embedder.dim))
            with fresh.lock:
                self._load(user_id, fresh)
                with self._users_lock:
                    st = self._users.setdefault(user_id, fresh)
                    while len(self._users) > self._max_users:
                        self._users.popitem(last=False)
        elif self._clock() - st.synced_at > self._sync_interval:
            with st.lock:
                self._load(user_id, st)
        return st

    def _load(self, user_id: str, st: _UserState) -> None:
        """Bring the index up to date with the store (adds what is missing, drops what is gone).

        A warm index reads records without vectors first and fetches vectors
        only for what it lacks: a periodic sync of a large user moves text,
        not 1.5 KB per memory.
        """
        warm = len(st.index) > 0
        batch = self.store.get(COLLECTION_MEMORIES, where={"user_id": user_id}, include_embeddings=not warm)
        stored = {r.id for r in batch.records}
        gone = [rid for rid in st.index.pos if rid not in stored]
        if gone:
            st.index.remove(gone)
        missing = [r.id for r in batch.records if r.id not in st.index]
        if missing:
            if warm:
                batch = self.store.get(COLLECTION_MEMORIES, ids=missing, include_embeddings=True)
                keep = list(range(len(batch.records)))
            else:
                keep = [i for i, r in enumerate(batch.records) if r.id not in st.index]
            if batch.embeddings is not None and keep:
                st.index.add([batch.records[i] for i in keep], batch.embeddings[keep])
        st.synced_at = self._clock()

    def _pull(self, st: _UserState, ids: Sequence[str]) -> None:
        """Add records another process wrote (seen in a store query) to the cache."""
        batch = self.store.get(COLLECTION_MEMORIES, ids=list(ids), include_embeddings=True)
        if batch.records and batch.embeddings is not None:
            with st.lock:
                st.index.add(batch.records, batch.embeddings)

    # ================================================================ write path
    def _make_turn(self, t: Turn | Mapping[str, Any]) -> Turn:
        if isinstance(t, Mapping):
            unknown = set(t) - {f.name for f in dataclasses.fields(Turn)}
            if unknown:
                raise InvalidInputError(f"turn has unknown field(s) {sorted(unknown)}")
            try:
                t = Turn(**t)
            except TypeError as exc:
                raise InvalidInputError(f"turn is missing a field: {exc}") from None
        if not isinstance(t, Turn):
            raise InvalidInputError(f"turn must be a Turn or a mapping, got {type(t).__name__}")
        check_text("text", t.text, self.limits)
        check_id("user_id", t.user_id, self.limits)
        check_id("session_id", t.session_id, self.limits)
        check_id("role", t.role, self.limits)
        ts = check_timestamp(t.timestamp)
        md = check_metadata(t.metadata, self.limits)
        return dataclasses.replace(t, timestamp=ts, metadata=md)

    def add(
        self,
        text: str,
        *,
        user_id: str,
        session_id: str,
        role: str = "user",
        timestamp: float | Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Store one conversation turn; returns its stable id.

        The id is derived from (user, session, text), so storing identical
        text in the same session again returns the existing id and stores
        nothing.

        Raises:
            InvalidInputError: A value is empty, of the wrong type or too long.
            StoreError: The store failed; nothing was added to the index.
        """
        return self.add_many(
            [Turn(text=text, user_id=user_id, session_id=session_id, role=role,
                  timestamp=timestamp, metadata=metadata)]  # type: ignore[arg-type]
        )[0]

    def add_many(self, turns: Iterable[Turn | Mapping[str, Any]]) -> list[str]:
        """Store many turns in one embedding batch; returns ids in input order.

        Every turn is validated before anything is written.
        """
        if isinstance(turns, (str, bytes, Mapping)) or not isinstance(turns, Iterable):
            raise InvalidInputError(f"turns must be an iterable of turns, got {type(turns).__name__}")
        checked = [self._make_turn(t) for t in turns]
        if not checked:
            return []
        now = self._clock()
        ids = [_hash_id(t.user_id, t.session_id, t.text.strip()) for t in checked]
        by_user: dict[str, list[int]] = {}
        for i, t in enumerate(checked):
            by_user.setdefault(t.user_id, []).append(i)
        for user_id, rows in by_user.items():
            st = self._state(user_id)
            with st.lock:
                seen: set[str] = set()
                todo = []
                for i in rows:
                    if ids[i] in st.index or ids[i] in seen:
                        continue
                    seen.add(ids[i])
                    todo.append(i)
                if not todo:
                    continue
                seq_next: dict[str, int] = {}
                records = []
                for i in todo:
                    t = checked[i]
                    seq = seq_next.get(t.session_id)
                    if seq is None:
                        seq = len(st.index.session_positions(t.session_id))
                    seq_next[t.session_id] = seq + 1
                    keys = tuple(dict.fromkeys(e.key for e in self.extractor.extract(t.text)))
                    records.append(Record(
                        id=ids[i], text=t.text, user_id=t.user_id, session_id=t.session_id, role=t.role,
                        timestamp=t.timestamp if t.timestamp is not None else now + seq * 1e-6,
                        seq=seq, entities=keys, metadata=t.metadata,
                    ))
                t0 = time.perf_counter()
                emb = self.embedder.embed_documents([r.text for r in records])
                t1 = time.perf_counter()
                self.store.upsert(COLLECTION_MEMORIES, records, emb)
                t2 = time.perf_counter()
                st.index.add(records, emb)
                self.metrics.observe("latency_ms.write_embed", (t1 - t0) * 1e3)
                self.metrics.observe("latency_ms.write_store", (t2 - t1) * 1e3)
                self.metrics.incr("memories_stored", len(records))
        return ids

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
            documents: Strings, or mappings with ``text`` and optional ``id``,
                ``title`` and ``metadata``.
            user_id: Owner; ``None`` makes the documents readable by every user.
        """
        owner = SHARED_OWNER if user_id is None else check_id("user_id", user_id, self.limits)
        if isinstance(documents, (str, bytes, Mapping)):
            documents = [documents]  # type: ignore[list-item]
        elif not isinstance(documents, Iterable):
            raise InvalidInputError(
                f"documents must be a str, a mapping or an iterable of them, got {type(documents).__name__}"
            )
        records: list[Record] = []
        now = self._clock()
        seen: dict[str, tuple[int, str]] = {}
        explicit: list[str] = []  # caller-given document ids: a re-add replaces the old version
        for n, doc in enumerate(documents):
            if isinstance(doc, Mapping):
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
                text = check_text(f"documents[{n}]", doc, self.limits)
                md, doc_id = {}, _hash_id(owner, text)
            first = seen.setdefault(doc_id, (n, text))
            if first[0] != n:
                if first[1] == text:
                    continue  # the same document twice: store it once
                raise InvalidInputError(
                    f"documents[{n}].id={doc_id!r} repeats documents[{first[0]}] with a different text"
                )
            for j, chunk in enumerate(chunk_text(text, max_words, overlap_words)):
                keys = tuple(dict.fromkeys(e.key for e in self.extractor.extract(chunk)))
                records.append(Record(
                    id=_hash_id(owner, doc_id, str(j)), text=chunk, user_id=owner, session_id=doc_id,
                    role="document", timestamp=now, seq=j, entities=keys, metadata=md,
                ))
        if not records:
            return []
        emb = self.embedder.embed_documents([r.text for r in records])
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

    def unpin(self, pin_id: str, *, user_id: str | None = None) -> Pin:
        """Remove a pin by id; returns it.

        Raises:
            NotFoundError: No such pin (or it belongs to another user).
        """
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

    def pins(self, user_id: str, session_id: str | None = None) -> list[Pin]:
        """The user's pins, oldest first: global ones plus those of ``session_id`` if given."""
        check_id("user_id", user_id, self.limits)
        st = self._state(user_id)
        with st.lock:
            allp = list(self._load_pins(user_id, st))
        if session_id is None:
            return allp
        return [p for p in allp if p.session_id in (None, session_id)]

    # ================================================================ forget
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
        with st.lock:
            mem = self.store.delete(COLLECTION_MEMORIES, where=where)
            pins = self.store.delete(COLLECTION_PINS, where=where)
            docs = 0
            if session_id is None:
                docs = self.store.delete(COLLECTION_CORPUS, where={"user_id": user_id})
                self._corpus_count = None
                with self._users_lock:
                    self._users.pop(user_id, None)
            else:
                gone = [r.id for r in st.index.records if r.session_id == session_id]
                st.index.remove(gone)
                st.pins = None
                st.correction_pending.discard(session_id)
        if mem == 0 and pins == 0 and docs == 0:
            raise NotFoundError(
                f"nothing stored for user {user_id!r}" + (f" in session {session_id!r}" if session_id else "")
            )
        self.metrics.incr("forgets")
        return ForgetReport(user_id=user_id, session_id=session_id, memories=mem, pins=pins)

    def count(self, user_id: str, session_id: str | None = None) -> int:
        """Memories stored for a user (or one session), read from the store."""
        check_id("user_id", user_id, self.limits)
        where: dict[str, Any] = {"user_id": user_id}
        if session_id is not None:
            where["session_id"] = check_id("session_id", session_id, self.limits)
        return self.store.count(COLLECTION_MEMORIES, where)

    # ================================================================ read path
    def decide(self, message: str) -> GateDecision:
        """Run only the gate (no search, no I/O)."""
        check_text("message", message, self.limits)
        return self.gate.decide(message)

    def recent(self, user_id: str, session_id: str) -> tuple[ScoredItem, ...]:
        """The recent window of a session: last N turns, each and all token capped."""
        check_id("user_id", user_id, self.limits)
        check_id("session_id", session_id, self.limits)
        return self._recent(self._state(user_id), session_id)

    def history(self, user_id: str, session_id: str) -> list[Record]:
        """Every stored turn of a session, oldest first (read from the store)."""
        check_id("user_id", user_id, self.limits)
        check_id("session_id", session_id, self.limits)
        batch = self.store.get(COLLECTION_MEMORIES, where={"user_id": user_id, "session_id": session_id})
        return sorted(batch.records, key=lambda r: (r.timestamp, r.seq))

    def _recent(self, st: _UserState, session_id: str) -> tuple[ScoredItem, ...]:
        cfg = self.retrieval_config
        if cfg.recent_turns == 0:
            return ()
        with st.lock:
            positions = st.index.session_positions(session_id)[-cfg.recent_turns:]
            recs = [st.index.records[p] for p in positions]
        out: list[ScoredItem] = []
        used = 0
        for rec in reversed(recs):  # newest first, so the oldest is dropped when over the cap
            text, cut = truncate_to_tokens(rec.text, cfg.recent_turn_max_tokens, self.token_counter)
            if cut:
                self.metrics.incr("truncations")
            tokens = self.token_counter.count(text)
            if used + tokens > cfg.recent_max_tokens:
                self.metrics.incr("truncations")
                break
            used += tokens
            out.append(ScoredItem(id=rec.id, text=text, source="recent", score=1.0, components={},
                                  tokens=tokens, tier="recent", why="recent window" + (" (truncated)" if cut else ""),
                                  record=rec))
        return tuple(reversed(out))

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
        if k is None:
            return self.retrieval_config.top_k
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
            raise InvalidInputError(f"k={k!r} is invalid: must be an int from 1 to 1000")
        return k

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
    ) -> _Search:
        """Rank one user's memories for ``query``.

        Candidates come from the in-process index: exact cosine top-C (the
        user's vectors are all there, which beats a metadata-filtered store
        query by an order of magnitude), BM25 top-C, entity top-C, the newest
        C (recency strategy) and the turns of a period the query names. Each
        candidate's conversation neighbours join them. Every scored turn gets
        the base components (relevance, keyword, entity, recency or time fit);
        the graph component then adds the support of linked turns: the best
        neighbour within ``graph_depth`` NEXT/PREV hops and the best other
        turn of the same session.
        """
        cfg = self.retrieval_config
        qtype = classify_query(query, entities)
        strat = strategy or STRATEGY_FOR[qtype]
        raw = weights or (cfg.weights if strat is Strategy.HYBRID else _PRESETS[strat])
        w = {c: float(raw.get(c, 0.0)) for c in _COMPONENTS}
        if strategy is None and qtype is QueryType.SPECIFIC and strat is Strategy.HYBRID:
            w["keyword"] += 0.15  # exact anchors: lean on BM25
        now = self._clock()
        cue = time_cue(query, entities, now) if strat in _TIME_AWARE else TimeCue()
        has_cue = bool(cue)
        if has_cue:
            # The query names a time: the time component measures fit to it, not recency.
            w["recency"] = max(w["recency"], _TIME_SHARE * (w["relevance"] + w["keyword"]))
        total_w = sum(w.values()) or 1.0
        w = {c: w[c] / total_w for c in _COMPONENTS}

        st = self._state(user_id)
        self._refresh(st, user_id, qvec)
        C = max(cfg.candidates, k)
        with st.lock:
            idx = st.index
            n = len(idx)
            if n == 0:
                return _Search((), (), strat, qtype)
            allowed: np.ndarray | None = None  # positions a result may take (session filter)
            if session_id is not None:
                allowed = idx.session_positions(session_id)
            ex = np.asarray(sorted(idx.pos[i] for i in exclude if i in idx.pos), dtype=np.int64)

            parts: list[np.ndarray] = []
            dense_rank: dict[int, int] = {}
            if w["relevance"] > 0 or strat is Strategy.HYBRID:
                if allowed is None:
                    dpos, _ = idx.dense_topk(qvec, C)
                else:
                    sims = idx.dense(qvec, allowed)
                    dpos = allowed[_topk(sims, C)]
                parts.append(dpos)
                dense_rank = {int(p): r for r, p in enumerate(dpos.tolist())}
            keyword = np.zeros(n, dtype=np.float32)
            if w["keyword"] > 0 or strat is Strategy.HYBRID:
                keyword = idx.bm25(query)
                if ex.size:
                    keyword[ex] = 0.0  # excluded turns (the recent window) must not set the scale
                kmax = float(keyword.max())
                if kmax > 0:
                    keyword /= kmax
                    parts.append(_topk_nonzero(keyword, C))
            keys = [e.key for e in entities]
            entity, related = idx.entity_scores(keys)
            if w["entity"] > 0:
                parts.append(_topk_nonzero(entity, C))
            if strat is Strategy.RECENCY:
                parts.append(_topk(idx.timestamps.astype(np.float64), C))
            if cue.window is not None:
                inside = np.flatnonzero((idx.timestamps >= cue.window[0]) & (idx.timestamps < cue.window[1]))
                if inside.size > C:
                    inside = inside[_topk(idx.dense(qvec, inside), C)]
                parts.append(inside)
            cand = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
            depth = cfg.graph_depth if w["graph"] > 0 else 0
            if depth and cand.size:
                cand = idx.expand(cand, depth)  # neighbours are scored too: the answer may be the next turn
            if allowed is not None and cand.size:
                cand = cand[np.isin(cand, allowed)]
            if ex.size and cand.size:
                cand = cand[~np.isin(cand, ex)]
            if cand.size == 0:
                return _Search((), (), strat, qtype)

            relevance = np.clip(idx.dense(qvec, cand), 0.0, 1.0)
            if has_cue:
                tfit = np.zeros(cand.size, dtype=np.float32)
                if cue.window is not None:
                    ts = idx.timestamps[cand]
                    tfit = ((ts >= cue.window[0]) & (ts < cue.window[1])).astype(np.float32)
                if cue.asks_when:
                    tfit = np.maximum(tfit, idx.has_time[cand].astype(np.float32))
                time_comp = tfit
            else:
                time_comp = idx.recency(now, cfg.half_life_s, cand)
            comp = {
                "recency": time_comp,
                "relevance": relevance,
                "keyword": keyword[cand],
                "entity": entity[cand],
                "graph": np.zeros(cand.size, dtype=np.float32),
            }
            base = sum(w[c] * comp[c] for c in _BASE)
            hops = np.zeros(cand.size, dtype=np.int64)
            if depth:
                b_total = sum(w[c] for c in _BASE) or 1.0
                half = 0.5 * w["graph"]
                nb, hops = idx.context(cand, base, depth, decay=_HOP_DECAY)
                nb /= b_total
                step = base + half * nb
                sess = idx.session_context(cand, step) / (b_total + half)
                comp["graph"] = np.minimum(0.5 * (nb + sess), 1.0)
                # report a hop only where the neighbour carried a real share of the score
                hops = np.where(half * nb >= 0.25 * (step + half * sess), hops, 0)
            final = base + w["graph"] * comp["graph"]
            if strat is Strategy.RELEVANCE:
                final = np.where(comp["relevance"] >= cfg.relevance_floor, final, -1.0)
            order = _topk(final, k + 5)
            order = order[final[order] > 0] if strat is not Strategy.RECENCY else order
            used = {c: w[c] for c in _COMPONENTS if w[c] > 0}
            items, rejected = [], []
            for rank, j in enumerate(order.tolist()):
                p = int(cand[j])
                rec = idx.records[p]
                comps = {c: float(comp[c][j]) for c in used}
                why = self._why(rec, comps, dense_rank.get(p), keys, int(hops[j]), related)
                if has_cue and comps.get("recency", 0) > 0:
                    why += "; time match"
                item = ScoredItem(id=rec.id, text=rec.text, source="memory", score=float(final[j]),
                                  components=comps, tokens=idx.token_count(p, self.token_counter.count),
                                  tier=tier_of(float(final[j]), self.budget_config), why=why, record=rec)
                if rank < k:
                    items.append(item)
                else:
                    rejected.append(dataclasses.replace(item, why=f"rank {rank + 1} > k={k}; {why}"))
        return _Search(tuple(items), tuple(rejected), strat, qtype)

    def _refresh(self, st: _UserState, user_id: str, qvec: np.ndarray) -> None:
        """Pick up memories other processes wrote, when the store can say so cheaply.

        A metadata-filtered store query is cheap on small stores and the
        in-memory store, but costs tens of milliseconds on a large Chroma
        collection. It is asked on every search while its measured latency
        stays under ``_FRESH_MS`` (judged after a few searches, so one slow
        call does not switch it off), else once per ``sync_interval_s`` (the
        periodic sync reloads the whole user anyway). A store that says it is
        ``shared`` (a Chroma server) is asked every time.
        """
        now = time.monotonic()
        probes, ewma, last = self._fresh_n, self._fresh_ms, self._fresh_at
        shared = bool(getattr(self.store, "shared", False))  # a server other processes write to: always ask
        if not shared and probes >= _FRESH_MIN_PROBES and ewma > _FRESH_MS and now - last < self._sync_interval:
            return
        t0 = time.perf_counter()
        hits = self.store.query(COLLECTION_MEMORIES, qvec, 8, {"user_id": user_id})
        ms = (time.perf_counter() - t0) * 1e3
        self._fresh_ms = ms if probes == 0 else 0.7 * ewma + 0.3 * ms
        self._fresh_n = probes + 1
        self._fresh_at = now
        unknown = [h.record.id for h in hits if h.record.id not in st.index]
        if unknown:
            self._pull(st, unknown)

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

    def _search_corpus(self, qvec: np.ndarray, entities: Sequence[Entity], user_id: str, k: int) -> list[ScoredItem]:
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
        top = _topk(final, k)
        for j in top[final[top] >= 0].tolist():
            h = hits[j]
            out.append(ScoredItem(
                id=h.record.id, text=h.record.text, source="corpus", score=float(final[j]),
                components={"relevance": float(sims[j]), "anchor": float(anchor[j])},
                tokens=self.token_counter.count(h.record.text), tier=tier_of(float(final[j]), self.budget_config),
                why=f"corpus vector #{j + 1}" + ("; anchor match" if anchor[j] else ""), record=h.record,
            ))
        return out

    def _useful(self, items: Sequence[ScoredItem], entities: Sequence[Entity], gate: GateDecision,
                query: str = "") -> str | None:
        """Cheap checks that a phase-1 memory hit answers the message; returns the reason or None."""
        if not items:
            return None
        best = items[0]
        if best.score >= self.retrieval_config.useful_score:
            return f"score {best.score:.2f} >= {self.retrieval_config.useful_score}"
        anchors = {e.key for e in entities if e.kind in _ANCHOR_KINDS}
        for it in items:
            hit = anchors & set(it.record.entities if it.record else ())
            if hit:
                return f"anchor {sorted(hit)[0]!r} found in memory"
        # Content terms only: the trigger words ("remember", "earlier") are in no memory.
        triggers = {t for r in gate.reasons if r.category != "personal" for t in tokenize(r.match)}
        qterms = set(tokenize(query)) - triggers
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
    ) -> RetrievalResult:
        """Decide whether and where to search for ``message``, search, and budget.

        Args:
            message: The user's new message (not stored by this call).
            user_id: Whose memories to search; nobody else's are ever read.
            session_id: Current session: enables the recent window and
                correction follow-up.
            k: Memories for a full memory search (default ``top_k``).
            strategy: Force a memory strategy (default: query classifier).
            route: Force a route instead of the gate's.
            budget_tokens: Override the token budget for this call.
            include_recent: Inject the session's recent window (turn off when
                the caller already sends its own message history).

        Backend failures never raise here: the result reports a degraded
        route in ``notes`` and carries whatever could be retrieved. Once the
        store was found unreachable, the steps that can only ask the store
        (corpus search, loading an uncached user) are skipped, so a dead or
        frozen store costs at most about two store timeouts per call.
        """
        t_start = time.perf_counter()
        check_text("message", message, self.limits)
        check_id("user_id", user_id, self.limits)
        if session_id is not None:
            check_id("session_id", session_id, self.limits)
        strat = check_strategy(strategy)
        k = self._check_k(k)
        if route is not None:
            try:
                route = Route(route)
            except ValueError:
                raise InvalidInputError(f"route={route!r} is unknown; use none, memory, corpus or both") from None
        if budget_tokens is not None and (not isinstance(budget_tokens, int) or budget_tokens < 0):
            raise InvalidInputError(f"budget_tokens={budget_tokens!r} is invalid: must be an int >= 0")
        cfg = self.retrieval_config
        timings: dict[str, float] = {}
        notes: list[str] = []

        t = time.perf_counter()
        gate = self.gate.decide(message)
        timings["gate"] = (time.perf_counter() - t) * 1e3
        taken = route or gate.route

        st: _UserState | None = None
        store_down = False  # set once the store was unreachable: later steps skip it
        pins: list[Pin] = []
        recent: tuple[ScoredItem, ...] = ()
        entities: list[Entity] = []
        t = time.perf_counter()
        try:
            st = self._state(user_id)
            with st.lock:
                pins = [p for p in self._load_pins(user_id, st) if p.session_id in (None, session_id)]
            if session_id is not None:
                pending = session_id in st.correction_pending
                st.correction_pending.discard(session_id)
                if gate.correction:
                    st.correction_pending.add(session_id)
                if (pending or gate.correction) and not taken.wants_memory and route is None:
                    taken = Route.BOTH if taken is Route.CORPUS else Route.MEMORY
                    notes.append("correction: memory pass forced" + (" (follow-up turn)" if pending else ""))
                if include_recent:
                    recent = self._recent(st, session_id)
        except StoreError as exc:
            notes.append(f"degraded: store unavailable for pins/recent ({type(exc).__name__})")
            self.metrics.incr("degraded")
            store_down = isinstance(exc, StoreUnavailableError)
            if st is not None and st.pins is not None:
                pins = [p for p in st.pins if p.session_id in (None, session_id)]
        if gate.correction and route is None and not taken.wants_memory:
            taken = Route.MEMORY
            notes.append("correction: memory pass forced")
        timings["state"] = (time.perf_counter() - t) * 1e3

        if taken is Route.CORPUS and route is None and st is not None:
            # A knowledge question about something the user's memories name
            # ("why did parse_notes() fail?") needs both sources: a dict lookup, no search.
            entities = self.extractor.extract(message)
            with st.lock:
                hits = st.index.known(e.key for e in entities if e.kind in _ANCHOR_KINDS)
            if hits:
                taken = Route.BOTH
                notes.append(f"query names {hits[0]!r} from memory: searching memory too")
        memory_items: list[ScoredItem] = []
        phase1: list[ScoredItem] = []  # phase-1 memories judged not useful
        corpus_items: list[ScoredItem] = []
        rejected: list[ScoredItem] = []
        search: _Search | None = None
        if taken is not Route.NONE:
            t = time.perf_counter()
            entities = entities or self.extractor.extract(message)
            qvec = self.embedder.embed_query(message)
            timings["embed"] = (time.perf_counter() - t) * 1e3
            exclude = frozenset(r.id for r in recent)
            want_corpus = taken.wants_corpus
            if taken.wants_memory and store_down and st is None:
                # The user's index could not be loaded and the store is unreachable:
                # searching would only wait on it again.
                notes.append("degraded: memory search skipped (store unavailable)")
                want_corpus = True
            elif taken.wants_memory:
                two_phase = taken is Route.MEMORY
                top = cfg.phase1_top_k if two_phase else k
                t = time.perf_counter()
                fut = self._pool.submit(self._search_memory, message, qvec, entities, user_id,
                                        strategy=strat, k=top, exclude=exclude)
                try:
                    search = fut.result(timeout=cfg.phase1_timeout_ms / 1e3 if two_phase else None)
                    memory_items = list(search.items)
                    rejected.extend(search.rejected)
                    self.metrics.incr("searches_run.memory")
                except cf.TimeoutError:
                    notes.append(f"degraded: memory lookup skipped: over its {cfg.phase1_timeout_ms:.0f} ms budget")
                    self.metrics.incr("phase1_timeouts")
                    fut.cancel()
                except StoreError as exc:
                    notes.append(f"degraded: memory store unavailable ({exc})")
                    self.metrics.incr("degraded")
                    store_down = isinstance(exc, StoreUnavailableError)
                timings["memory"] = (time.perf_counter() - t) * 1e3
                if two_phase:
                    useful = self._useful(memory_items, entities, gate, message)
                    if useful:
                        notes.append(f"memory useful ({useful}): corpus skipped")
                        self.metrics.incr("searches_skipped.memory_useful")
                    else:
                        phase1 = memory_items
                        memory_items = []
                        want_corpus = True
            if want_corpus and store_down:
                notes.append("degraded: corpus search skipped (store unavailable)")
            elif want_corpus:
                t = time.perf_counter()
                try:
                    if self._corpus_count is None:
                        self._corpus_count = self.store.count(COLLECTION_CORPUS)
                    if self._corpus_count == 0:
                        notes.append("no corpus documents: corpus search skipped")
                        self.metrics.incr("searches_skipped.no_corpus")
                    else:
                        corpus_items = self._search_corpus(qvec, entities, user_id, k)
                        self.metrics.incr("searches_run.corpus")
                except StoreError as exc:
                    notes.append(f"degraded: corpus store unavailable ({exc})")
                    self.metrics.incr("degraded")
                timings["corpus"] = (time.perf_counter() - t) * 1e3
            if phase1:
                if corpus_items:
                    notes.append("memory not useful: dropped for the corpus")
                    rejected.extend(dataclasses.replace(i, why="phase 1: not useful") for i in phase1)
                else:  # nothing better to offer: a weak memory beats no context
                    notes.append("memory not clearly useful, but the corpus had nothing: kept")
                    memory_items = phase1
        else:
            self.metrics.incr("searches_skipped.route_none")

        t = time.perf_counter()
        budget = budget_tokens if budget_tokens is not None else budget_for(
            message, entities, taken, self.budget_config)
        fixed = sum(p.tokens for p in pins) + sum(r.tokens for r in recent)
        weak = [i for i in (*memory_items, *corpus_items) if i.score < cfg.min_score]
        rejected.extend(dataclasses.replace(i, why=f"score {i.score:.2f} < min_score {cfg.min_score}") for i in weak)
        strong = [i for i in (*memory_items, *corpus_items) if i.score >= cfg.min_score]
        sel = select_items(strong, budget=max(budget - fixed, 0),
                           config=self.budget_config, diversity_threshold=cfg.diversity_threshold)
        rejected.extend(sel.rejected)
        used = fixed + sel.tokens
        context = format_context(pins, recent, sel.selected)
        timings["select"] = (time.perf_counter() - t) * 1e3
        timings["total"] = (time.perf_counter() - t_start) * 1e3

        final_route = self._route_taken(sel.selected, taken)
        m = self.metrics
        m.incr(f"routes.gate.{gate.route.value}")
        m.incr(f"routes.taken.{final_route.value}")
        m.observe("tokens_injected", used)
        for phase, ms in timings.items():
            m.observe(f"latency_ms.{phase}", ms)
        m.turn(f"{user_id}/{session_id or '-'}", tokens=used, searches=int(taken is not Route.NONE))
        return RetrievalResult(
            message=message, gate=gate, route=final_route,
            strategy=search.strategy if search else None, query_type=search.query_type if search else None,
            items=sel.selected, recent=recent, pins=tuple(pins), rejected=tuple(rejected),
            tokens_used=used, tokens_left=max(budget - used, 0), timings_ms=timings, notes=tuple(notes),
            context=context,
        )

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

    def stats(self) -> dict[str, Any]:
        """Metrics as a plain dict (counters, latency p50/p95, per conversation and day)."""
        return self.metrics.snapshot()

    def close(self) -> None:
        """Stop background threads (the store stays usable by others)."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> ChatRecall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


