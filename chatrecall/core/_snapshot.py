"""On-disk snapshots of a user's :class:`UserIndex`, so a new process starts warm.

A snapshot is one file per user, ``<key>.snap``, in a directory the store names
(``ChromaStore.snapshot_dir``); ``<key>`` is a hash of the user id. The file is
a small JSON header (user id, validation fields, the layout of the arrays, the
string tables) followed by the raw arrays of the index: vectors, BM25 lengths
and postings, entity, session and co-occurrence tables, sign bits, the
records as columns (texts as one UTF-8 block), and the bytes of the user's
vector index when the engine has one (restored only by the same kind). The
header repeats the user id and is checked on load, so a snapshot is never
served to another user; a CRC-32 over the arrays catches a damaged file. Loading is a read of the file
and a checksum: tables and records are built per key / per position on first
use (:class:`LazyRecords`, :class:`_LazyTable`), so a 100K-memory user costs
about as much as reading its vectors.

**Staleness.** Every write of a user's memories through the engine (add,
upsert, delete, forget) changes the user's *version*, a small file
``<key>.ver`` beside the snapshot holding a random token. It is changed
twice, before the store write and after it (:meth:`SnapshotCache.writing`),
under an exclusive file lock, and records which writers are between the two
(with their pid and start time). A snapshot stores the version it was taken
at and is served only while the version is still that token, so

* a write by another engine or process makes it stale (new token);
* a crash between the store write and the second change leaves the first
  change: stale too; the writer is recorded as open, and since it is dead
  (pid gone, or open for over an hour) a later loader trusts the store again;
* while a live writer is open, no snapshot is served or written.

Loading a snapshot of a local store asks nothing of the store: on a 100K-memory
Chroma collection any first call costs 0.5-0.8 s (the collection is opened),
more than the rest of the load. The price: a write that bypasses the engine
(direct ``ChromaStore`` use, an older chatrecall) is not seen on load; a
running engine reconciles it at its next periodic sync (``sync_interval_s``),
after which the snapshot it writes is right again. For a store that other
hosts share (``store.shared``), whose writes never touch this host's version
file, the user's ids are also read (ids only) and compared with the
snapshot's digest of them. A code fingerprint (tokenizer, patterns, BM25
constants, package version) and the index's attribute names must match too:
an index built by other code is rebuilt.

A process saves a user's snapshot only while it knows its cached index equals
the store: it loaded the user (from a valid snapshot, or from the store with
the version unchanged across the read and no live writer open) and every
version change since was its own. The same knowledge lets a running engine
skip its per-search freshness probe of a local store
(:meth:`SnapshotCache.unchanged`: one small file read instead of a filtered
vector query, 0.3 s on a 100K collection). An engine over a store opened
without snapshots (``ChromaStore(snapshots=False)``) does not change versions:
do not mix it with snapshotting engines on one local store.

Only numpy and the standard library are used.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableSequence
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any, overload

import numpy as np

from ._index import UserIndex
from ._protocols import VectorIndexFactory
from ._types import Record

try:  # POSIX: the version file is read-modify-written under an exclusive lock
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LazyRecords", "SnapshotCache", "SnapshotError", "code_fingerprint", "ids_digest", "load", "read_header",
           "remove", "save", "snapshot_key"]

#: Bumped when the file layout changes (older snapshots are rebuilt).
FORMAT = 2
_MAGIC = b"CRSNAP2\n"
_ALIGN = 64
# pos is derived from the ids; records are stored as columns; the vector index as its own bytes ("ann")
_SKIP = frozenset({"pos", "records", "_ann", "_ann_factory"})
#: An open writer older than this is taken for dead (no single store write lasts an hour).
OPEN_MAX_S = 3600.0
_MISSING: Any = object()
#: Writer ids of the snapshot caches of this process (an open entry with our pid but an unknown id is stale).
_LIVE_WRITERS: set[str] = set()


class SnapshotError(Exception):
    """A snapshot could not be written or read (the caller rebuilds from the store)."""


def snapshot_key(user_id: str) -> str:
    """File stem of a user's snapshot (a hash: user ids may hold any character)."""
    return hashlib.sha256(("chatrecall-user\x1f" + user_id).encode("utf-8")).hexdigest()[:40]


def ids_digest(ids: Iterable[str]) -> tuple[int, str]:
    """(count, sha256 of the sorted ids): the fallback check of a snapshot against the store."""
    items = sorted(ids)
    h = hashlib.sha256()
    h.update("\x1f".join(items).encode("utf-8"))
    return len(items), h.hexdigest()


_PROBES = (
    "Alice's OperationalError happened yesterday at 10:30 in Paris; we're moving to Lisbon next week!",
    "Can you remind me what the doctor said about my knee in May 2023? exit code 137, HTTP 502",
    "I bought 3 red Trek bikes for the kids’ birthdays — they're 7 and 9 years old.",
)


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of everything the index derives from a record's text: a snapshot of other code is rebuilt."""
    from chatrecall._version import __version__

    from . import _classifier, _index

    parts: list[Any] = [FORMAT, __version__, UserIndex.K1, UserIndex.B, UserIndex.EXACT_MAX]
    for name in sorted(vars(_index)):
        val = getattr(_index, name)
        if hasattr(val, "pattern") and hasattr(val, "flags"):
            parts.append([name, val.pattern, val.flags])
        elif isinstance(val, frozenset):
            parts.append([name, sorted(map(str, val))])
    # what a dispute rules out is left out of its index terms (_index._ruled_out)
    parts.append([_classifier._NEGATED.pattern, sorted(_classifier._FILLER)])
    try:
        parts.append([_index.tokenize(t) for t in _PROBES])
        idx = UserIndex(8)
        idx.add([Record(id=str(i), text=t, user_id="u", session_id="s", role="user", timestamp=float(i))
                 for i, t in enumerate(_PROBES)], np.eye(len(_PROBES), 8, dtype=np.float32))
        parts.append([idx.has_time.tolist(), idx.has_error.tolist(), idx.answered(np.arange(len(_PROBES))).tolist()])
    except Exception as exc:  # noqa: BLE001 - an index API change must not break loading: it changes the print
        parts.append(f"{type(exc).__name__}: {exc}")
    return hashlib.sha256(json.dumps(parts, default=str).encode("utf-8")).hexdigest()[:24]


def _signature(index: UserIndex) -> list[str]:
    return sorted(vars(index))


# ---------------------------------------------------------------- lazy containers
class _LazyTable(defaultdict):  # type: ignore[type-arg]
    """A table restored from a snapshot: each key's value is built on first access.

    Lookups (``get``, ``[]``, ``in``) build one value; anything that walks the
    whole table (iteration, ``items``, equality...) builds every value first,
    so it behaves like the dict it replaces. With a ``default_factory`` a
    missing key gets a new value, as in a ``defaultdict``; without one it is a
    ``KeyError``, as in a dict. (A defaultdict subclass, so that ``==`` with a
    dict or defaultdict on either side asks this class.)
    """

    def __init__(self, keys: list[str], build: Callable[[int], Any], factory: Callable[[], Any] | None) -> None:
        super().__init__(factory)
        self._slot: dict[str, int] = dict(zip(keys, range(len(keys))))
        self._build = build

    def _take(self, key: Any) -> Any:
        i = self._slot.get(key)
        if i is None:
            return _MISSING
        val = dict.setdefault(self, key, self._build(i))
        self._slot.pop(key, None)  # after the value is in: a reader always finds one or the other
        return val

    def _all(self) -> None:
        for key in list(self._slot):
            self._take(key)

    @property
    def pending(self) -> int:
        """Keys whose value has not been built yet."""
        return len(self._slot)

    def __getitem__(self, key: Any) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        val = self._take(key)
        if val is not _MISSING:
            return val
        if self.default_factory is None:
            raise KeyError(key)
        return dict.setdefault(self, key, self.default_factory())

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        val = self._take(key)
        return default if val is _MISSING else val

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._slot

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._slot.pop(key, None)

    def __delitem__(self, key: Any) -> None:
        had = self._slot.pop(key, None) is not None
        if dict.__contains__(self, key):
            dict.__delitem__(self, key)
        elif not had:
            raise KeyError(key)

    def __len__(self) -> int:
        return dict.__len__(self) + len(self._slot)

    def __iter__(self) -> Iterator[Any]:
        self._all()
        return dict.__iter__(self)

    def __reversed__(self) -> Iterator[Any]:
        self._all()
        return dict.__reversed__(self)  # type: ignore[no-any-return]

    def keys(self) -> Any:
        self._all()
        return dict.keys(self)

    def values(self) -> Any:
        self._all()
        return dict.values(self)

    def items(self) -> Any:
        self._all()
        return dict.items(self)

    def pop(self, key: Any, *default: Any) -> Any:
        self._take(key)
        return dict.pop(self, key, *default)

    def popitem(self) -> Any:
        self._all()
        return dict.popitem(self)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        val = self.get(key, _MISSING)
        return dict.setdefault(self, key, default) if val is _MISSING else val

    def update(self, *args: Any, **kw: Any) -> None:
        for key, val in dict(*args, **kw).items():
            self[key] = val

    def clear(self) -> None:
        self._slot.clear()
        dict.clear(self)

    def copy(self) -> Any:
        self._all()
        items = dict(dict.items(self))
        return items if self.default_factory is None else defaultdict(self.default_factory, items)

    def __eq__(self, other: object) -> bool:
        self._all()
        if isinstance(other, _LazyTable):
            other._all()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        self._all()
        return f"_LazyTable({dict.__repr__(self)})"

    def __reduce__(self) -> Any:
        copy = self.copy()
        return (type(copy), (copy,)) if self.default_factory is None else (defaultdict, (self.default_factory, copy))


class _Columns:
    """The records of a snapshot as columns; :meth:`record` builds one."""

    __slots__ = ("user_id", "ids", "texts", "text_off", "sessions", "r_sess", "roles", "r_role", "ts", "seq",
                 "ent_names", "ent_off", "ent_flat", "meta")

    def __init__(self, user_id: str, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
        cols = header["records"]
        self.user_id = user_id
        self.ids: list[str] = cols["ids"]
        self.texts = arrays["r:texts"]
        self.text_off = arrays["r:text_off"]
        self.sessions: list[str] = cols["sessions"]
        self.r_sess = arrays["r:sess"]
        self.roles: list[str] = cols["roles"]
        self.r_role = arrays["r:role"]
        self.ts = arrays["r:ts"]
        self.seq = arrays["r:seq"]
        self.ent_names: list[str] = cols["entities"]
        self.ent_off = arrays["r:ent_off"]
        self.ent_flat = arrays["r:ent_flat"]
        self.meta: dict[str, dict[str, Any]] = cols["meta"]

    def record(self, p: int) -> Record:
        a, b = int(self.text_off[p]), int(self.text_off[p + 1])
        ea, eb = int(self.ent_off[p]), int(self.ent_off[p + 1])
        names = self.ent_names
        md = self.meta.get(str(p))
        return Record(id=self.ids[p], text=self.texts[a:b].tobytes().decode("utf-8"), user_id=self.user_id,
                      session_id=self.sessions[int(self.r_sess[p])], role=self.roles[int(self.r_role[p])],
                      timestamp=float(self.ts[p]), seq=int(self.seq[p]),
                      entities=tuple(names[j] for j in self.ent_flat[ea:eb].tolist()),
                      metadata=MappingProxyType(dict(md)) if md else _EMPTY)


_EMPTY: Mapping[str, Any] = MappingProxyType({})


class LazyRecords(MutableSequence[Record]):
    """The index's record list after a snapshot load: a :class:`Record` is built on first access.

    Behaves as a list of records (index, slice, iterate, append); inserting or
    deleting in the middle first builds every record.
    """

    __slots__ = ("_cols", "_items")

    def __init__(self, cols: _Columns) -> None:
        self._cols: _Columns | None = cols
        self._items: list[Record | None] = [None] * len(cols.ids)

    def _build(self, p: int) -> Record:
        assert self._cols is not None
        rec = self._cols.record(p)
        self._items[p] = rec
        return rec

    def _all(self) -> list[Record]:
        if self._cols is not None:
            for p, r in enumerate(self._items):
                if r is None:
                    self._build(p)
            self._cols = None
        return self._items  # type: ignore[return-value]

    @property
    def built(self) -> int:
        """How many records have been built (for tests and benchmarks)."""
        return sum(r is not None for r in self._items)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, i: int) -> Record: ...

    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._items)))]
        rec = self._items[i]
        if rec is None:
            rec = self._build(i if i >= 0 else i + len(self._items))
        return rec

    def __iter__(self) -> Iterator[Record]:
        items = self._items
        for p in range(len(items)):
            rec = items[p]
            yield rec if rec is not None else self._build(p)

    @overload
    def __setitem__(self, i: int, value: Record) -> None: ...

    @overload
    def __setitem__(self, i: slice, value: Iterable[Record]) -> None: ...

    def __setitem__(self, i: Any, value: Any) -> None:
        if isinstance(i, slice):
            self._all()[i] = value
        else:
            self._items[i] = value

    def __delitem__(self, i: int | slice) -> None:
        del self._all()[i]

    def insert(self, index: int, value: Record) -> None:
        self._all().insert(index, value)

    def append(self, value: Record) -> None:
        self._items.append(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, LazyRecords)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyRecords({len(self)} records, {self.built} built)"


# ---------------------------------------------------------------- dump
def _csr(keys: list[Any], values: Iterable[Iterable[int]]) -> tuple[np.ndarray, np.ndarray]:
    lens: list[int] = []
    flat: list[int] = []
    for v in values:
        before = len(flat)
        flat.extend(v)
        lens.append(len(flat) - before)
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lens, dtype=np.int64), out=offsets[1:])
    return offsets, np.asarray(flat, dtype=np.int64)


def _bytes(a: np.ndarray) -> memoryview:
    return memoryview(a.data).cast("B") if a.nbytes else memoryview(b"")


def _factory_name(val: Any) -> str | None:
    f = getattr(val, "default_factory", None)
    return f.__name__ if f is not None else None


#: Arrays of the index sized by its sentence count (``_n_parts``), not by its record count.
_PART_ARRAYS = frozenset({"_part_emb", "_part_owner"})


def _dump_attrs(index: UserIndex) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Split the index's attributes into a JSON header part and arrays; SnapshotError if one is unknown."""
    meta: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    link = getattr(index, "_link", None)
    if callable(link):
        link()  # session order is computed now, not by the first query after a load (it reads every record)
    n = len(index)
    cap = int(index._emb.shape[0])
    for name, val in vars(index).items():
        if name in _SKIP:
            continue
        factory = _factory_name(val) if isinstance(val, dict) else None
        if isinstance(val, np.ndarray):
            if name in _PART_ARRAYS:  # sentence vectors: their own capacity
                val = val[: index._n_parts]
            elif cap != n and val.ndim >= 1 and val.shape[0] == cap:
                val = val[:n]  # spare capacity is not stored
            elif cap != n and name == "_bits" and val.ndim == 2 and val.shape[1] == cap:
                val = val[:, :n]
            arrays[f"a:{name}"] = val
            meta[name] = {"kind": "array"}
        elif val is None or isinstance(val, (bool, int, float, str)):
            meta[name] = {"kind": "scalar", "value": val}
        elif isinstance(val, (set, frozenset)) and all(isinstance(v, str) for v in val):
            meta[name] = {"kind": "set", "value": sorted(val)}
        elif isinstance(val, dict):
            if name.endswith("_np"):  # lazily materialised per-key arrays: a cache, rebuilt on demand
                meta[name] = {"kind": "cache", "factory": factory}
                continue
            keys = list(val)
            values = [val[k] for k in keys]
            if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                meta[name] = {"kind": "intmap", "factory": factory, "value": dict(zip(keys, values))}
            elif all(isinstance(v, Counter) for v in values) and factory in (None, "Counter"):
                names: dict[str, int] = {}
                inner_off, inner_flat = _csr(keys, ([names.setdefault(x, len(names)) for x in c] for c in values))
                counts = np.asarray([c[x] for c in values for x in c], dtype=np.int64)
                meta[name] = {"kind": "counters", "factory": factory, "keys": keys, "names": list(names)}
                arrays[f"o:{name}"], arrays[f"f:{name}"], arrays[f"c:{name}"] = inner_off, inner_flat, counts
            elif all(isinstance(v, list) for v in values):
                meta[name] = {"kind": "lists", "factory": factory, "keys": keys}
                arrays[f"o:{name}"], arrays[f"f:{name}"] = _csr(keys, values)
            elif all(isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, list) for x in v) for v in values):
                meta[name] = {"kind": "pairs", "factory": factory, "keys": keys}
                arrays[f"o:{name}"], arrays[f"f:{name}"] = _csr(keys, (v[0] for v in values))
                arrays[f"o2:{name}"], arrays[f"f2:{name}"] = _csr(keys, (v[1] for v in values))
            else:
                raise SnapshotError(f"UserIndex.{name}: table of {type(values[0]).__name__} is not supported")
        else:
            raise SnapshotError(f"UserIndex.{name}: {type(val).__name__} is not supported")
    return meta, arrays


def _dump_vector_index(index: UserIndex, arrays: dict[str, np.ndarray]) -> str | None:
    """Add the index's vector index (brought up to date) as bytes; its factory's name, or None without one."""
    ann = index.sync_vector_index()
    factory = index.vector_index_factory
    if ann is None or factory is None:
        return None
    try:
        arrays["ann"] = np.frombuffer(ann.to_bytes(), dtype=np.uint8)
    except Exception:  # noqa: BLE001 - the snapshot is still worth writing; the next process rebuilds the index
        return None
    return str(factory.name)


def _restore_vector_index(index: UserIndex, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
                          ann: VectorIndexFactory | None) -> None:
    """Attach the stored vector index when it was made by ``ann``'s kind; else it is rebuilt on first need."""
    data = arrays.get("ann")
    if ann is None or data is None or header.get("ann") != ann.name:
        return
    try:
        restored = ann.restore(data.tobytes(), index.dim)
    except Exception:  # noqa: BLE001 - a cache of a cache: the index is rebuilt from the vectors on first need
        return
    if len(restored) <= len(index):
        index.attach_vector_index(restored)


def _dump_records(index: UserIndex, user_id: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    ids: list[str] = []
    texts: list[bytes] = []
    sessions: dict[str, int] = {}
    roles: dict[str, int] = {}
    ents: dict[str, int] = {}
    r_sess: list[int] = []
    r_role: list[int] = []
    ts: list[float] = []
    seq: list[int] = []
    ent_lists: list[list[int]] = []
    meta: dict[str, dict[str, Any]] = {}
    for p, r in enumerate(index.records):
        if r.user_id != user_id:
            raise SnapshotError(f"record {r.id!r} belongs to another user")
        ids.append(r.id)
        texts.append(r.text.encode("utf-8"))
        r_sess.append(sessions.setdefault(r.session_id, len(sessions)))
        r_role.append(roles.setdefault(r.role, len(roles)))
        ts.append(r.timestamp)
        seq.append(r.seq)
        ent_lists.append([ents.setdefault(e, len(ents)) for e in r.entities])
        if r.metadata:
            meta[str(p)] = dict(r.metadata)
    text_off = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts)), out=text_off[1:])
    ent_off, ent_flat = _csr(ids, ent_lists)
    cols: dict[str, Any] = {"ids": ids, "sessions": list(sessions), "roles": list(roles), "entities": list(ents),
                            "meta": meta}
    arrays: dict[str, np.ndarray] = {
        "r:texts": np.frombuffer(b"".join(texts), dtype=np.uint8),
        "r:text_off": text_off,
        "r:sess": np.asarray(r_sess, dtype=np.int32),
        "r:role": np.asarray(r_role, dtype=np.int32),
        "r:ts": np.asarray(ts, dtype=np.float64),
        "r:seq": np.asarray(seq, dtype=np.int64),
        "r:ent_off": ent_off,
        "r:ent_flat": ent_flat.astype(np.int32),
    }
    return cols, arrays


def save(folder: Path, user_id: str, index: UserIndex, *, version: str | None) -> Path:
    """Write ``index`` of ``user_id`` atomically (a temp file renamed over the old one); returns its path.

    Args:
        folder: Snapshot directory (created if missing).
        version: The user's version token the index is known to match.

    Raises:
        SnapshotError: The index holds something the format cannot store,
            or the file could not be written.
    """
    attrs, arrays = _dump_attrs(index)
    cols, rec_arrays = _dump_records(index, user_id)
    arrays.update(rec_arrays)
    ann_name = _dump_vector_index(index, arrays)
    count, digest = ids_digest(cols["ids"])
    layout: dict[str, list[Any]] = {}
    off = 0
    crc = 0
    chunks: list[tuple[int, np.ndarray]] = []
    for name, arr in arrays.items():
        a = np.ascontiguousarray(arr)
        off += (-off) % _ALIGN
        layout[name] = [a.dtype.str, list(a.shape), off]
        chunks.append((off, a))
        off += a.nbytes
    header = {"format": FORMAT, "user_id": user_id, "count": count, "digest": digest, "version": version,
              "fingerprint": code_fingerprint(), "signature": _signature(index), "attrs": attrs,
              "records": cols, "layout": layout, "data_len": off, "ann": ann_name, "saved_at": time.time()}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{snapshot_key(user_id)}.snap"
    tmp = folder / f"{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        pos = 0  # the checksum covers the data block as written, padding included
        for at, a in chunks:
            crc = zlib.crc32(b"\0" * (at - pos), crc)
            crc = zlib.crc32(_bytes(a), crc)
            pos = at + a.nbytes
        header["crc32"] = crc
        raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
        pad = (-(len(_MAGIC) + 8 + len(raw))) % _ALIGN
        with open(tmp, "wb") as fh:
            fh.write(_MAGIC + len(raw).to_bytes(8, "little") + raw + b"\0" * pad)
            pos = 0
            for at, a in chunks:
                fh.write(b"\0" * (at - pos))
                fh.write(_bytes(a))
                pos = at + a.nbytes
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError) as exc:
        raise SnapshotError(f"cannot write snapshot: {type(exc).__name__}: {exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return path


# ---------------------------------------------------------------- load
def _open(folder: Path, user_id: str) -> tuple[IO[bytes], dict[str, Any]] | None:
    """The open snapshot file (positioned at its data) and its header; None when missing or unreadable."""
    try:
        fh = open(folder / f"{snapshot_key(user_id)}.snap", "rb")  # noqa: SIM115 - returned open
    except OSError:
        return None
    try:
        head = fh.read(len(_MAGIC) + 8)
        if len(head) != len(_MAGIC) + 8 or head[:len(_MAGIC)] != _MAGIC:
            raise ValueError("not a snapshot")
        size = int.from_bytes(head[len(_MAGIC):], "little")
        if size > os.fstat(fh.fileno()).st_size:
            raise ValueError("header length beyond the file")
        header = json.loads(fh.read(size).decode("utf-8"))
        fh.seek((-(len(head) + size)) % _ALIGN, os.SEEK_CUR)
    except (OSError, ValueError):
        fh.close()
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("user_id") != user_id:
        fh.close()
        return None
    return fh, header


def read_header(folder: Path, user_id: str) -> dict[str, Any] | None:
    """The header of the user's snapshot, or None when there is none or it is unreadable."""
    opened = _open(folder, user_id)
    if opened is None:
        return None
    opened[0].close()
    return opened[1]


def _read_arrays(fh: IO[bytes], header: Mapping[str, Any]) -> dict[str, np.ndarray]:
    size = int(header["data_len"])
    if not 0 <= size <= os.fstat(fh.fileno()).st_size:
        raise SnapshotError(f"truncated snapshot: {size} bytes of data announced")
    buf = np.empty(size, dtype=np.uint8)  # not zero-filled: the read writes every byte
    got = fh.readinto(buf.data)  # type: ignore[attr-defined]
    if got != size:
        raise SnapshotError(f"truncated snapshot: {got} of {size} bytes")
    if zlib.crc32(buf.data) != header.get("crc32"):
        raise SnapshotError("snapshot checksum mismatch")
    arrays = {}
    for name, (dtype, shape, at) in header["layout"].items():
        dt = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        if at < 0 or at + nbytes > size:
            raise SnapshotError(f"array {name!r} lies outside the snapshot")
        arrays[name] = buf[at:at + nbytes].view(dt).reshape(shape)  # writable views of the one buffer
    return arrays


_FACTORIES: dict[str, Any] = {"list": list, "Counter": Counter, "int": int, "set": set}


def _factory(name: str | None) -> Callable[[], Any] | None:
    if name is None:
        return None
    if name not in _FACTORIES:
        raise SnapshotError(f"unknown defaultdict factory {name!r}")
    return _FACTORIES[name]  # type: ignore[no-any-return]


def _slicer(off: np.ndarray, flat: np.ndarray) -> Callable[[int], list[int]]:
    bounds = off.tolist()

    def part(i: int) -> list[int]:
        return flat[bounds[i]:bounds[i + 1]].tolist()  # type: ignore[no-any-return]

    return part


def _pairs(first: Callable[[int], list[int]], second: Callable[[int], list[int]]
           ) -> Callable[[int], tuple[list[int], list[int]]]:
    def pair(i: int) -> tuple[list[int], list[int]]:
        return first(i), second(i)

    return pair


def _restore(index: UserIndex, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray], user_id: str) -> None:
    attrs: Mapping[str, Any] = header["attrs"]
    for name, spec in attrs.items():
        kind, factory = spec["kind"], _factory(spec.get("factory"))
        if kind == "array":
            val: Any = arrays[f"a:{name}"]
        elif kind == "scalar":
            val = spec["value"]
        elif kind == "set":
            val = set(spec["value"])
        elif kind == "cache":
            val = defaultdict(factory) if factory is not None else {}
        elif kind == "intmap":
            val = defaultdict(factory, spec["value"]) if factory is not None else dict(spec["value"])
        elif kind == "lists":
            val = _LazyTable(spec["keys"], _slicer(arrays[f"o:{name}"], arrays[f"f:{name}"]), factory)
        elif kind == "pairs":
            first = _slicer(arrays[f"o:{name}"], arrays[f"f:{name}"])
            second = _slicer(arrays[f"o2:{name}"], arrays[f"f2:{name}"])
            val = _LazyTable(spec["keys"], _pairs(first, second), factory)
        elif kind == "counters":
            names: list[str] = spec["names"]
            bounds = arrays[f"o:{name}"].tolist()
            flat, counts = arrays[f"f:{name}"], arrays[f"c:{name}"]

            def counter(i: int, bounds: list[int] = bounds, flat: np.ndarray = flat, counts: np.ndarray = counts,
                        names: list[str] = names) -> Counter[str]:
                a, b = bounds[i], bounds[i + 1]
                return Counter(dict(zip((names[j] for j in flat[a:b].tolist()), counts[a:b].tolist())))

            val = _LazyTable(spec["keys"], counter, factory)
        else:
            raise SnapshotError(f"unknown attribute kind {kind!r}")
        setattr(index, name, val)
    cols = _Columns(user_id, header, arrays)
    if len(cols.text_off) != len(cols.ids) + 1:
        raise SnapshotError("record columns do not match")
    index.records = LazyRecords(cols)
    index.pos = dict(zip(cols.ids, range(len(cols.ids))))


def _load_open(fh: IO[bytes], header: Mapping[str, Any], user_id: str, dim: int,
               ann: VectorIndexFactory | None = None) -> UserIndex:
    index = UserIndex(dim, ann=ann)
    if header.get("signature") != _signature(index):
        raise SnapshotError("snapshot was written by another version of UserIndex")
    if header.get("fingerprint") != code_fingerprint():
        raise SnapshotError("snapshot was written by other index code (tokenizer, patterns or version)")
    try:
        arrays = _read_arrays(fh, header)
        _restore(index, header, arrays, user_id)
        _restore_vector_index(index, header, arrays, ann)
    except SnapshotError:
        raise
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise SnapshotError(f"corrupted snapshot: {type(exc).__name__}: {exc}") from exc
    n = int(header["count"])
    if len(index) != n or index.dim != dim or len(index.pos) != n or index.embeddings.shape != (n, dim):
        raise SnapshotError("snapshot does not match its header")
    return index


def load(folder: Path, user_id: str, dim: int, *, ann: VectorIndexFactory | None = None) -> UserIndex | None:
    """The user's index from its snapshot file, without any check against the store (None: no snapshot).

    ``ann`` makes the loaded index's vector index; the stored one is attached when ``ann`` made it.

    Raises:
        SnapshotError: The file is corrupted or does not fit this code.
    """
    opened = _open(folder, user_id)
    if opened is None:
        return None
    fh, header = opened
    with fh:
        return _load_open(fh, header, user_id, dim, ann)


def remove(folder: Path, user_id: str) -> None:
    """Delete a user's snapshot (after ``forget``), format-1 files included; missing files are fine."""
    key = snapshot_key(user_id)
    for suffix in (".snap", ".npz", ".json"):
        with contextlib.suppress(OSError):
            (folder / f"{key}{suffix}").unlink()


# ---------------------------------------------------------------- versions
def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _live(writer: str, entry: Any, now: float) -> bool:
    """Whether an open writer entry ``[pid, started]`` may still be writing."""
    try:
        pid, started = int(entry[0]), float(entry[1])
    except (TypeError, ValueError, IndexError):
        return False
    if now - started > OPEN_MAX_S:
        return False
    if pid == os.getpid():
        return writer in _LIVE_WRITERS
    return _pid_alive(pid)


def _parse_version(raw: bytes) -> tuple[str | None, dict[str, Any]]:
    if not raw:
        return None, {}
    try:
        data = json.loads(raw.decode("utf-8"))
        token, opened = data["v"], data.get("open") or {}
        if not isinstance(token, str) or not isinstance(opened, dict):
            raise ValueError("bad version file")
    except (ValueError, KeyError, TypeError, AttributeError):
        return "unreadable:" + hashlib.sha256(raw).hexdigest()[:16], {}  # a writer died mid-write: a new state
    return token, opened


def _read_fd(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def read_version(folder: Path, user_id: str) -> tuple[str | None, dict[str, Any]]:
    """The user's version token (None: never written through a snapshotting engine) and its open writers.

    The file ``<key>.ver`` is rewritten in place under an exclusive lock and
    read under a shared one.
    """
    try:
        fd = os.open(folder / f"{snapshot_key(user_id)}.ver", os.O_RDONLY)
    except FileNotFoundError:
        return None, {}
    except OSError:
        return "unreadable:" + os.urandom(8).hex(), {}
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)
        raw = _read_fd(fd)
    except OSError:
        return "unreadable:" + os.urandom(8).hex(), {}
    finally:
        os.close(fd)  # releases the lock
    return _parse_version(raw)


@contextlib.contextmanager
def _version_file(folder: Path, user_id: str) -> Iterator[tuple[int, str | None, dict[str, Any], int]]:
    """The user's version file, locked for a read-modify-write: (fd, token, open writers, size)."""
    fd = os.open(folder / f"{snapshot_key(user_id)}.ver", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        raw = _read_fd(fd)
        token, opened = _parse_version(raw)
        yield fd, token, opened, len(raw)
    finally:
        os.close(fd)  # releases the lock


def _write_fd(fd: int, token: str, opened: Mapping[str, Any], size: int) -> None:
    """Overwrite in place, padded with spaces to at least the old size: no truncation, no new block."""
    raw = json.dumps({"v": token, "open": dict(opened)}, separators=(",", ":")).encode("utf-8")
    raw = raw.ljust(max(size, -(-len(raw) // 256) * 256))
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, raw)


class SnapshotCache:
    """The engine's snapshots over one store (a no-op when the store names no ``snapshot_dir``).

    Args:
        store: A store with ``snapshot_dir`` (a path or None), ``ids(collection,
            where)`` and ``count(collection)``; ``shared`` (optional) says
            other hosts write to it.
        min_records: Users with fewer memories are not snapshotted (their
            rebuild from the store is fast anyway).
        ann: The vector index kind of restored indexes (see :meth:`UserIndex.sync_vector_index`).
    """

    def __init__(self, store: Any, *, min_records: int = 1000, ann: VectorIndexFactory | None = None) -> None:
        self.ann = ann
        folder = getattr(store, "snapshot_dir", None)
        ids = getattr(store, "ids", None)
        self.folder: Path | None = Path(folder) if folder is not None and callable(ids) else None
        self._store = store
        self._ids = ids
        self.shared = bool(getattr(store, "shared", False))
        self.min_records = min_records
        self.writer = os.urandom(8).hex()
        _LIVE_WRITERS.add(self.writer)
        #: user -> the version token the cached index is known to equal the store at
        self._synced: dict[str, str | None] = {}
        #: user -> the version of the snapshot file this cache wrote or loaded
        self._saved: dict[str, str | None] = {}
        self.loaded = 0
        self.rejected = 0
        self.written = 0
        self._folder_made = False
        #: Why the last restore of each user was refused or how it was validated (tests, benchmarks).
        self.last: dict[str, str] = {}

    @property
    def enabled(self) -> bool:
        """Whether snapshots are read and written."""
        return self.folder is not None

    def _disable(self) -> None:
        self.folder = None  # the directory cannot be written: no snapshots, writes go on

    # ------------------------------------------------------------ versions
    def _live_open(self, opened: Mapping[str, Any]) -> bool:
        now = time.time()
        return any(_live(w, e, now) for w, e in opened.items())

    def _bump(self, user_id: str, *, opening: bool, ok: bool = True) -> None:
        folder = self.folder
        if folder is None:
            return
        new = os.urandom(12).hex()
        try:
            if not self._folder_made:
                folder.mkdir(parents=True, exist_ok=True)
                self._folder_made = True
            with _version_file(folder, user_id) as (fd, token, opened, size):
                in_sync = ok and user_id in self._synced and self._synced[user_id] == token
                now = time.time()
                opened = {w: e for w, e in opened.items() if w != self.writer and _live(w, e, now)}
                if opening:
                    opened[self.writer] = [os.getpid(), now]
                _write_fd(fd, new, opened, size)
        except OSError:
            self._synced.pop(user_id, None)
            self._disable()
            return
        if in_sync:
            self._synced[user_id] = new
        else:
            self._synced.pop(user_id, None)

    @contextlib.contextmanager
    def writing(self, user_id: str) -> Iterator[None]:
        """Wrap a store write of the user's memories (and the index update that follows it).

        The version changes before the write (a crash inside leaves the
        snapshot stale) and after it (a loader that read the store during the
        write does not trust what it read). A write that raised leaves this
        cache out of sync with the store, so it writes no snapshot of the user.
        """
        self._bump(user_id, opening=True)
        ok = False
        try:
            yield
            ok = True
        finally:
            self._bump(user_id, opening=False, ok=ok)

    def begin_sync(self, user_id: str) -> Any:
        """Before reading the user's records from the store: the version to compare after."""
        if self.folder is None:
            return _MISSING
        return read_version(self.folder, user_id)[0]

    def end_sync(self, user_id: str, before: Any) -> None:
        """After the cached index was made equal to what the store returned: in sync if nobody wrote meanwhile."""
        if self.folder is None or before is _MISSING:
            return
        token, opened = read_version(self.folder, user_id)
        if token == before and not self._live_open(opened):
            self._synced[user_id] = token
        else:
            self._synced.pop(user_id, None)

    def unchanged(self, user_id: str) -> bool:
        """True when no engine wrote the user's memories since this cache's index matched the store.

        One small file read. Always False for a store other hosts share, and
        when the user is not known to be in sync.
        """
        if self.folder is None or self.shared:
            return False
        want = self._synced.get(user_id, _MISSING)
        if want is _MISSING:
            return False
        return bool(read_version(self.folder, user_id)[0] == want)

    # ------------------------------------------------------------ restore / save
    def _reject(self, user_id: str, why: str, *, delete: bool = True) -> None:
        self.rejected += 1
        self.last[user_id] = why
        if delete and self.folder is not None:
            remove(self.folder, user_id)

    def restore(self, user_id: str, collection: str, dim: int) -> UserIndex | None:
        """The user's index from a valid snapshot, else None (a stale or bad snapshot is deleted).

        Costs a version file read when a snapshot exists, and for a shared
        store an ids-only store read; nothing is asked of a local store.
        """
        if self.folder is None:
            return None
        opened_file = _open(self.folder, user_id)
        if opened_file is None:
            if (self.folder / f"{snapshot_key(user_id)}.npz").exists():  # format 1: never read, just dropped
                remove(self.folder, user_id)
            return None
        fh, header = opened_file
        with fh:
            token, opened = read_version(self.folder, user_id)
            if header.get("version") != token:
                self._reject(user_id, "stale: version")
                return None
            if self._live_open(opened):
                self._reject(user_id, "writer open", delete=False)
                return None
            how = "ok"
            if self.shared:  # other hosts' writes never touch this host's version file
                assert self._ids is not None
                count, digest = ids_digest(self._ids(collection, {"user_id": user_id}))
                if count != header.get("count") or digest != header.get("digest"):
                    self._reject(user_id, "stale: ids")
                    return None
                how = "ok: ids compared"
            try:
                index = _load_open(fh, header, user_id, dim, self.ann)
            except Exception as exc:  # noqa: BLE001 - a snapshot is a cache: whatever fails, the store rebuilds it
                self._reject(user_id, f"corrupt: {exc}" if isinstance(exc, SnapshotError)
                             else f"corrupt: {type(exc).__name__}: {exc}")
                return None
        self.loaded += 1
        self.last[user_id] = how
        self._synced[user_id] = token
        if how == "ok":
            self._saved[user_id] = token
        else:  # ids were compared: rewrite at the next save, which also drops records the store lost
            self._saved.pop(user_id, None)
        return index

    def save(self, user_id: str, index: UserIndex, collection: str = "memories") -> bool:
        """Write the user's snapshot when it is large, known to match the store, and changed since."""
        folder = self.folder
        if folder is None or len(index) < self.min_records:
            return False
        want = self._synced.get(user_id, _MISSING)
        if want is _MISSING:
            return False  # another process wrote since we loaded: our index may lack its records
        token, opened = read_version(folder, user_id)
        if token != want or self._live_open(opened):
            self._synced.pop(user_id, None)
            return False
        if user_id in self._saved and self._saved[user_id] == token \
                and (folder / f"{snapshot_key(user_id)}.snap").exists():
            return False
        try:
            save(folder, user_id, index, version=token)
        except Exception:  # noqa: BLE001 - never let a snapshot break a load or close; the next load rebuilds
            return False
        self._saved[user_id] = token
        self.written += 1
        return True

    def touched(self, user_id: str) -> None:
        """The cached index changed without a write of this process (a sync): write it again at the next save."""
        self._saved.pop(user_id, None)

    def invalidate(self, user_id: str) -> None:
        """Drop the user's snapshot (after ``forget``)."""
        self._saved.pop(user_id, None)
        if self.folder is not None:
            remove(self.folder, user_id)
