"""LangGraph integration: :class:`ChatRecallStore`, a ``BaseStore`` backed by chatrecall.

Give it to a graph or an agent (``create_agent(model, tools, store=store)``,
``StateGraph.compile(store=store)``) and everything the agent writes to its
long-term store becomes chatrecall memory: ranked by chatrecall's hybrid search
when the agent searches the store, recalled by :meth:`ChatRecall.retrieve`
for that user, removed by :meth:`ChatRecall.forget`.

How namespaces map onto chatrecall's scoping
--------------------------------------------

* ``namespace[user_position]`` (default: the first label) is the chatrecall
  ``user_id``. ``("u1", "memories")`` and ``("u1", "prefs", "food")`` are both
  memories of user ``u1``; nothing stored under them is ever read for another
  user. Every namespace must have that label.
* The whole namespace, labels joined with ``"."``, is the chatrecall
  ``session_id`` (``"u1.memories"``): the remaining labels act as session or
  kind. LangGraph labels cannot contain ``"."``, so the mapping is one-to-one;
  ``cr.forget("u1", "u1.memories")`` clears one namespace and
  ``cr.search(q, user_id="u1", session_id="u1.memories")`` searches one.
* The key names one memory inside its namespace (its id is a hash of user,
  namespace and key); ``put`` on an existing key replaces the memory, keeping
  its ``created_at``.
* The memory's text is the first of ``text_fields`` the value has as a
  non-empty string (``"text"``, ``"content"``, ``"memory"`` by default; a
  per-item ``index=["a.b"]`` names other paths), else the value as JSON. The
  whole value is kept (as JSON) and given back by ``get`` and ``search``; its
  top-level scalar fields are also copied into the memory's metadata.
* Items carry role ``"langgraph"`` (``role=``): ``list_namespaces`` and
  ``search`` see only those, never the user's chat turns, while
  :meth:`ChatRecall.retrieve` recalls both.

``search(prefix, query=...)`` runs :meth:`ChatRecall.search` (hybrid of dense,
BM25, entity, recency and graph scores) for the prefix's user; ``score`` is
chatrecall's fused score. Matching items the search did not rank follow,
unscored, as in LangGraph's ``InMemoryStore``. A search prefix must name the
user: searching every user at once is refused (``list_namespaces`` over all
users is allowed; it is an operator's view). ``filter`` supports exact matches,
nested dicts and ``$eq $ne $gt $gte $lt $lte``. TTLs are not supported.

Example:
    >>> from chatrecall.testing import fake_engine
    >>> from chatrecall.adapters.langgraph import ChatRecallStore
    >>> store = ChatRecallStore(fake_engine())
    >>> store.put(("u1", "memories"), "db", {"text": "Billing runs on Postgres 16", "topic": "infra"})
    >>> store.get(("u1", "memories"), "db").value["topic"]
    'infra'
    >>> [i.key for i in store.search(("u1",), query="which database for billing?")]
    ['db']
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._guard import require

require("langgraph.store.base", "langgraph", package="langgraph")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from chatrecall.core import ChatRecall, InvalidInputError, Record, check_id, keywords_checked  # noqa: E402

from ._common import check_engine  # noqa: E402

__all__ = ["DEFAULT_TEXT_FIELDS", "ROLE", "ChatRecallStore"]

#: Role of the memories this store writes (chat turns have user/assistant).
ROLE = "langgraph"
#: Value fields tried, in order, for a memory's text.
DEFAULT_TEXT_FIELDS = ("text", "content", "memory")

_KEY, _VALUE, _UPDATED = "lg_key", "lg_value", "lg_updated"
_RESERVED_MD = frozenset({"user_id", "session_id", "role", "timestamp", "seq", "entities", "id", "text"})
_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def _now() -> float:
    return _dt.datetime.now(_dt.timezone.utc).timestamp()


def _dt_of(ts: float) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(ts, tz=_dt.timezone.utc)


def _labels(namespace: Any) -> tuple[str, ...]:
    """``namespace`` as a tuple of labels. A str is refused: ``tuple("alice")`` is one user per letter, so a
    forgotten tuple would store alice's memories for user "a", shared with every id starting with it (nu46)."""
    if isinstance(namespace, (str, bytes)):
        raise InvalidNamespaceError(
            f"namespace={namespace!r} is a {type(namespace).__name__}, not a tuple of labels: pass "
            f"({namespace!r},) or a longer tuple such as ({namespace!r}, 'memories')")
    try:
        return tuple(namespace)
    except TypeError:
        raise InvalidNamespaceError(
            f"namespace must be a tuple of str labels, got {type(namespace).__name__}") from None


def _validate_labels(namespace: Any) -> tuple[str, ...]:
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(f"namespace must be a tuple of str labels, got {type(namespace).__name__}")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {namespace}: labels are non-empty str without '.' or NUL"
            )
    return namespace


def _path_values(value: Any, path: str) -> list[Any]:
    """Values at a LangGraph field path (``a.b``, ``a[0]``, ``a[-1]``, ``a[*].b``)."""
    current: list[Any] = [value]
    for part in path.split("."):
        name, _, rest = part.partition("[")
        nxt: list[Any] = []
        for v in current:
            if name:
                if not isinstance(v, Mapping) or name not in v:
                    continue
                v = v[name]
            nxt.append(v)
        while rest:
            idx, _, rest = rest.partition("]")
            rest = rest.lstrip("[")
            expanded: list[Any] = []
            for v in nxt:
                if not isinstance(v, list):
                    continue
                if idx == "*":
                    expanded.extend(v)
                else:
                    try:
                        expanded.append(v[int(idx)])
                    except (ValueError, IndexError):
                        continue
            nxt = expanded
        current = nxt
    return current


def _apply_op(have: Any, op: str, want: Any) -> bool:
    if op == "$eq":
        return bool(have == want)
    if op == "$ne":
        return bool(have != want)
    try:
        a, b = float(have), float(want)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _matches(have: Any, want: Any) -> bool:
    """LangGraph's filter semantics: exact match, nested dicts, lists, ``$`` operators."""
    if isinstance(want, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in want):
            unknown = [k for k in want if k not in _OPS]
            if unknown:
                raise InvalidInputError(f"filter operator(s) {unknown} are unknown; use one of {', '.join(_OPS)}")
            return all(_apply_op(have, k, v) for k, v in want.items())
        if not isinstance(have, Mapping):
            return False
        return all(_matches(have.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return (isinstance(have, (list, tuple)) and len(have) == len(want)
                and all(_matches(h, w) for h, w in zip(have, want)))
    return bool(have == want)


def _check_filter(flt: Any, path: str = "filter") -> None:
    """Refuse unknown ``$`` operators up front, even when nothing would be compared."""
    if flt is None:
        return
    if not isinstance(flt, Mapping):
        raise InvalidInputError(f"{path}={flt!r:.60} is invalid: pass a dict such as {{'topic': 'infra'}}")
    for k, v in flt.items():
        if isinstance(k, str) and k.startswith("$") and k not in _OPS:
            raise InvalidInputError(f"{path} operator {k!r} is unknown; use one of {', '.join(_OPS)}")
        if isinstance(v, Mapping):
            _check_filter(v, f"{path}[{k!r}]")


def _ns_matches(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path) if cond.match_type == "prefix" else zip(reversed(ns), reversed(path))
    if cond.match_type not in ("prefix", "suffix"):
        raise InvalidInputError(f"match_type={cond.match_type!r} is unknown; use 'prefix' or 'suffix'")
    return all(p == "*" or k == p for k, p in pairs)


class ChatRecallStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are chatrecall memories (see the module docstring).

    Example:
        >>> from langchain.agents import create_agent  # doctest: +SKIP
        >>> agent = create_agent(model, tools=[...], store=ChatRecallStore(cr))  # doctest: +SKIP

    Args:
        engine: The :class:`ChatRecall` engine.
        user_position: Which namespace label is the user id (default 0).
        text_fields: Value fields tried, in order, for the memory's text.
        role: Role of the memories written (marks them as store items).
        search_strategy: Memory strategy for ``search(query=...)`` (default:
            chatrecall's query classifier).

    Raises:
        ConfigError: ``engine`` is not a :class:`ChatRecall` (as in every adapter).
        InvalidInputError: A bad position, field list or role.
    """

    supports_ttl = False

    @keywords_checked
    def __init__(
        self,
        engine: ChatRecall,
        *,
        user_position: int = 0,
        text_fields: str | Sequence[str] = DEFAULT_TEXT_FIELDS,
        role: str = ROLE,
        search_strategy: str | None = None,
    ) -> None:
        engine = check_engine(engine, "ChatRecallStore")
        if not isinstance(user_position, int) or isinstance(user_position, bool) or user_position < 0:
            raise InvalidInputError(f"user_position={user_position!r} is invalid: must be an int >= 0")
        fields = (text_fields,) if isinstance(text_fields, str) else tuple(text_fields)
        if not fields or not all(isinstance(f, str) and f for f in fields):
            raise InvalidInputError(f"text_fields={text_fields!r} is invalid: give one or more field names")
        self.engine = engine
        self.user_position = user_position
        self.text_fields = fields
        self.role = check_id("role", role, engine.limits)
        self.search_strategy = search_strategy

    # ------------------------------------------------------------------ mapping
    def _user(self, namespace: tuple[str, ...], what: str = "namespace") -> str:
        if len(namespace) <= self.user_position:
            raise InvalidInputError(
                f"{what}={namespace!r} has no user label at position {self.user_position}: "
                f"use a namespace like {('u1', 'memories') if self.user_position == 0 else ('memories', 'u1')} "
                "(ChatRecallStore(user_position=...) says which label is the user id)"
            )
        return check_id(f"{what}[{self.user_position}] (the user id)", namespace[self.user_position],
                        self.engine.limits)

    @staticmethod
    def _session(namespace: tuple[str, ...]) -> str:
        return ".".join(namespace)

    def memory_id(self, namespace: tuple[str, ...], key: str) -> str:
        """The chatrecall memory id of the item ``key`` in ``namespace``."""
        user = self._user(_validate_labels(namespace))
        digest = hashlib.sha256("\x1f".join((ROLE, user, *namespace, "", key)).encode("utf-8")).hexdigest()
        return "lg-" + digest[:32]

    def _text(self, value: Mapping[str, Any], index: Any) -> str:
        paths: Sequence[str] = self.text_fields if not isinstance(index, list) else index
        parts: list[str] = []
        for path in paths:
            found = [v for v in _path_values(value, path) if isinstance(v, str) and v.strip()]
            if found and not isinstance(index, list):
                return found[0]
            parts.extend(found)
        if parts:
            return "\n".join(parts)
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)

    def _metadata(self, key: str, value: Mapping[str, Any], updated: float) -> dict[str, Any]:
        try:
            blob = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"value of key {key!r} is not JSON-serialisable: {exc}") from None
        md: dict[str, Any] = {_KEY: key, _VALUE: blob, _UPDATED: updated}
        room = self.engine.limits.max_metadata_keys - len(md)
        for k, v in value.items():
            if room <= 0:
                break
            ok_key = isinstance(k, str) and 0 < len(k) <= 128 and not k.startswith(("$", "lg_"))
            if not ok_key or k in _RESERVED_MD or any(ord(c) < 32 for c in k):
                continue
            scalar = isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v))
            if scalar and not (isinstance(v, str) and len(v) > self.engine.limits.max_text_chars):
                md[k] = v
                room -= 1
        return md

    def _item(self, rec: Record, namespace: tuple[str, ...], score: float | None = None,
              search: bool = False) -> Item:
        value = json.loads(str(rec.metadata.get(_VALUE, "{}")))
        updated = float(rec.metadata.get(_UPDATED, rec.timestamp))
        key = str(rec.metadata.get(_KEY, rec.id))
        if search:
            return SearchItem(namespace=namespace, key=key, value=value, created_at=_dt_of(rec.timestamp),
                              updated_at=_dt_of(updated), score=score)
        return Item(value=value, key=key, namespace=namespace, created_at=_dt_of(rec.timestamp),
                    updated_at=_dt_of(updated))

    def _own(self, rec: Record) -> tuple[str, ...] | None:
        """The namespace of a record this store wrote, else None."""
        if rec.role != self.role or _VALUE not in rec.metadata:
            return None
        return tuple(rec.session_id.split("."))

    # ------------------------------------------------------------------ operations
    def _get(self, op: GetOp) -> Item | None:
        ns = _validate_labels(_labels(op.namespace))
        user = self._user(ns)
        recs = self.engine.get_memories(user, ids=[self.memory_id(ns, str(op.key))])
        for rec in recs:
            if self._own(rec) == ns:
                return self._item(rec, ns)
        return None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = _validate_labels(_labels(op.namespace_prefix))
        user = self._user(prefix, "namespace_prefix")
        limit, offset = int(op.limit), int(op.offset)
        if limit < 0 or offset < 0:
            raise InvalidInputError(f"limit={limit} / offset={offset} are invalid: both must be >= 0")
        _check_filter(op.filter)
        candidates: dict[str, tuple[Record, tuple[str, ...]]] = {}
        for rec in self.engine.get_memories(user):
            ns = self._own(rec)
            if ns is None or ns[: len(prefix)] != prefix:
                continue
            if op.filter:
                value = json.loads(str(rec.metadata[_VALUE]))
                if not all(_matches(value.get(k), v) for k, v in op.filter.items()):
                    continue
            candidates[rec.id] = (rec, ns)
        if not candidates or limit == 0:
            return []
        order: list[tuple[str, float | None]] = []
        if op.query and op.query.strip():
            sessions = {ns for _, ns in candidates.values()}
            session = self._session(next(iter(sessions))) if len(sessions) == 1 else None
            k = min(1000, self.engine.count(user, session) if session else self.engine.count(user))
            hits = self.engine.search(op.query, user_id=user, k=max(k, 1), session_id=session,
                                      strategy=self.search_strategy)
            order = [(h.id, h.score) for h in hits if h.id in candidates]
        ranked = {rid for rid, _ in order}
        order.extend((rid, None) for rid in candidates if rid not in ranked)
        return [
            self._item(candidates[rid][0], candidates[rid][1], score, search=True)  # type: ignore[misc]
            for rid, score in order[offset: offset + limit]
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conds = tuple(op.match_conditions or ())
        for c in conds:
            _validate_labels(_labels(c.path))
        found = sorted({tuple(s.split(".")) for _, s in self.engine.list_sessions(role=self.role)})
        out = [ns for ns in found if all(_ns_matches(c, ns) for c in conds)]
        if op.max_depth is not None:
            out = sorted({ns[: op.max_depth] for ns in out})
        return out[op.offset: op.offset + op.limit]

    def _apply_puts(self, puts: Mapping[tuple[tuple[str, ...], str], PutOp]) -> None:
        for (ns, key), op in puts.items():
            user = self._user(ns)
            rid = self.memory_id(ns, key)
            if op.value is None:
                self.engine.delete_memories(user, [rid])
                continue
            if not isinstance(op.value, Mapping):
                raise InvalidInputError(f"value for key {key!r} must be a dict, got {type(op.value).__name__}")
            value = dict(op.value)
            now = _now()
            old = self.engine.get_memories(user, ids=[rid])
            created = old[0].timestamp if old else now
            self.engine.upsert(rid, self._text(value, op.index), user_id=user, session_id=self._session(ns),
                               role=self.role, timestamp=created, metadata=self._metadata(key, value, now))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops in order; reads see the store as it was before this batch's writes.

        Several puts of one key in a batch: the last wins (as in ``InMemoryStore``).
        """
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))  # type: ignore[arg-type]
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                ns = _validate_labels(_labels(op.namespace))
                if not ns:
                    raise InvalidNamespaceError("Namespace cannot be empty.")
                self._user(ns)  # refuse before anything is written
                if op.ttl is not None:
                    raise NotImplementedError("TTL is not supported by ChatRecallStore: set ttl=None")
                puts[(ns, str(op.key))] = op
                results.append(None)
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}: {op!r:.80}")
        self._apply_puts(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on the engine's async pool: the event loop is never blocked."""
        return await self.engine._arun(self.batch, list(ops))

    def forget_namespace(self, namespace: tuple[str, ...]) -> int:
        """Delete every item of one namespace (not of deeper ones); returns how many."""
        ns = _validate_labels(_labels(namespace))
        user = self._user(ns)
        ids = [r.id for r in self.engine.get_memories(user, session_id=self._session(ns)) if self._own(r) == ns]
        return self.engine.delete_memories(user, ids) if ids else 0

