"""On-disk snapshots of a user's :class:`UserIndex`, so a new process starts warm.

A snapshot is two files per user in a directory the store names
(``ChromaStore.snapshot_dir``): ``<key>.npz`` with every array of the index
(vectors, BM25 lengths, sign bits, per-position flags...) and the flattened
posting, entity, session and co-occurrence tables, and ``<key>.json`` with the
records and the validation header. ``<key>`` is a hash of the user id; the
header repeats the user id and is checked on load, so a snapshot can never be
served to another user.

Validation is cheap and done against the store on every load: the number of
the user's records and a digest of their sorted ids (one ids-only store read,
no vectors, no documents), plus the user's write token (a value the engine
changes on every write of that user, so a text replaced under the same id is
seen too). Anything that does not match, fails to parse, or was written by an
index with other attributes is discarded and the index is rebuilt from the
store, after which a fresh snapshot is written.

Only numpy and the standard library are used. The serialisation walks the
index's attributes by type, so an attribute added to :class:`UserIndex` later
is either saved generically (arrays, scalars, tables of int lists) or makes
:func:`dump` refuse (then no snapshot is written, nothing breaks).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zipfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from ._index import UserIndex
from ._types import Record

__all__ = ["SnapshotCache", "SnapshotError", "ids_digest", "load", "remove", "save", "snapshot_key"]

#: Bumped when the file layout changes (older snapshots are rebuilt).
FORMAT = 1
_SKIP = frozenset({"pos"})  # derived from records on load


class SnapshotError(Exception):
    """A snapshot could not be written or read (the caller rebuilds from the store)."""


def snapshot_key(user_id: str) -> str:
    """File stem of a user's snapshot (a hash: user ids may hold any character)."""
    return hashlib.sha256(("chatrecall-user\x1f" + user_id).encode("utf-8")).hexdigest()[:40]


def ids_digest(ids: Iterable[str]) -> tuple[int, str]:
    """(count, sha256 of the sorted ids): what a snapshot is validated against."""
    items = sorted(ids)
    h = hashlib.sha256()
    for i in items:
        h.update(i.encode("utf-8"))
        h.update(b"\x1f")
    return len(items), h.hexdigest()


def _signature(index: UserIndex) -> list[str]:
    return sorted(vars(index))


def _csr(table: Mapping[str, Any]) -> tuple[list[str], np.ndarray, np.ndarray]:
    keys = list(table)
    lens = np.fromiter((len(table[k]) for k in keys), dtype=np.int64, count=len(keys))
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    flat = np.fromiter((v for k in keys for v in table[k]), dtype=np.int64, count=int(offsets[-1]))
    return keys, offsets, flat


def _uncsr(keys: list[str], offsets: np.ndarray, flat: np.ndarray) -> list[list[int]]:
    values = flat.tolist()
    bounds = offsets.tolist()
    return [values[bounds[i]:bounds[i + 1]] for i in range(len(keys))]


def _dump_attrs(index: UserIndex) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Split the index's attributes into a JSON header part and arrays; SnapshotError if one is unknown."""
    meta: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for name, val in vars(index).items():
        if name in _SKIP or name == "records":
            continue
        factory = val.default_factory.__name__ if isinstance(val, defaultdict) and val.default_factory else None
        if isinstance(val, np.ndarray):
            arrays[f"a:{name}"] = val
            meta[name] = {"kind": "array"}
        elif val is None or isinstance(val, (bool, int, float, str)):
            meta[name] = {"kind": "scalar", "value": val}
        elif isinstance(val, (set, frozenset)) and all(isinstance(v, str) for v in val):
            meta[name] = {"kind": "set", "value": sorted(val)}
        elif isinstance(val, dict):
            values = list(val.values())
            if name.endswith("_np"):  # lazily materialised per-term arrays: a cache, rebuilt on demand
                meta[name] = {"kind": "cache", "factory": factory}
            elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                meta[name] = {"kind": "intmap", "factory": factory, "value": val}
            elif all(isinstance(v, Counter) for v in values) and factory in (None, "Counter"):
                keys = list(val)
                meta[name] = {"kind": "counters", "factory": factory, "keys": keys,
                              "inner": [list(val[k]) for k in keys]}
                arrays[f"c:{name}"] = np.fromiter((c for k in keys for c in val[k].values()), dtype=np.int64)
            elif all(isinstance(v, list) for v in values):
                keys, off, flat = _csr(val)
                meta[name] = {"kind": "lists", "factory": factory, "keys": keys}
                arrays[f"o:{name}"], arrays[f"f:{name}"] = off, flat
            elif all(isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, list) for x in v) for v in values):
                keys, off, flat = _csr({k: v[0] for k, v in val.items()})
                _, off2, flat2 = _csr({k: v[1] for k, v in val.items()})
                meta[name] = {"kind": "pairs", "factory": factory, "keys": keys}
                arrays[f"o:{name}"], arrays[f"f:{name}"] = off, flat
                arrays[f"o2:{name}"], arrays[f"f2:{name}"] = off2, flat2
            else:
                raise SnapshotError(f"UserIndex.{name}: table of {type(values[0]).__name__} is not supported")
        else:
            raise SnapshotError(f"UserIndex.{name}: {type(val).__name__} is not supported")
    return meta, arrays


_FACTORIES: dict[str, Any] = {"list": list, "Counter": Counter, "int": int, "set": set}


def _table(factory: str | None, items: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    if factory is None:
        return dict(items)
    if factory not in _FACTORIES:
        raise SnapshotError(f"unknown defaultdict factory {factory!r}")
    out: defaultdict[str, Any] = defaultdict(_FACTORIES[factory])
    out.update(items)
    return out


def _record_rows(index: UserIndex, user_id: str) -> list[list[Any]]:
    rows = []
    for r in index.records:
        if r.user_id != user_id:
            raise SnapshotError(f"record {r.id!r} belongs to another user")
        rows.append([r.id, r.text, r.session_id, r.role, r.timestamp, r.seq, list(r.entities), dict(r.metadata)])
    return rows


def save(folder: Path, user_id: str, index: UserIndex, *, count: int, digest: str, token: str | None) -> Path:
    """Write ``index`` of ``user_id`` atomically; returns the JSON path.

    Args:
        folder: Snapshot directory (created if missing).
        count, digest: :func:`ids_digest` of the user's ids in the store.
        token: The user's write token in the store (None when it has none).

    Raises:
        SnapshotError: The index holds something the format cannot store,
            or the files could not be written.
    """
    meta, arrays = _dump_attrs(index)
    if len(index) != count:
        raise SnapshotError(f"index holds {len(index)} records, the store {count}")
    header = {"format": FORMAT, "user_id": user_id, "count": count, "digest": digest, "token": token,
              "signature": _signature(index), "attrs": meta, "records": _record_rows(index, user_id)}
    folder.mkdir(parents=True, exist_ok=True)
    key = snapshot_key(user_id)
    # the same random nonce in both files: a reader never pairs arrays and header of different writes
    nonce = os.urandom(16).hex()
    header["nonce"] = nonce
    arrays["nonce"] = np.frombuffer(bytes.fromhex(nonce), dtype=np.uint8)
    tmp_tag = f".{os.getpid()}.{nonce[:8]}.tmp"
    npz, js = folder / f"{key}.npz", folder / f"{key}.json"
    tmp_npz, tmp_js = folder / f"{key}{tmp_tag}.npz", folder / f"{key}{tmp_tag}.json"
    try:
        with open(tmp_npz, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # zip members carry CRC-32: a flipped byte fails to load
        tmp_js.write_text(json.dumps(header, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp_npz, npz)
        os.replace(tmp_js, js)
    except OSError as exc:
        raise SnapshotError(f"cannot write snapshot: {exc}") from exc
    finally:
        for f in (tmp_npz, tmp_js):
            with contextlib.suppress(OSError):
                f.unlink()
    return js


def read_header(folder: Path, user_id: str) -> dict[str, Any] | None:
    """The header of the user's snapshot, or None when there is none or it is unreadable."""
    try:
        header = json.loads((folder / f"{snapshot_key(user_id)}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("user_id") != user_id:
        return None
    return header


def load(folder: Path, user_id: str, dim: int, *, count: int, digest: str, token: str | None,
         header: dict[str, Any] | None = None) -> UserIndex | None:
    """The user's index from its snapshot, or None when it is missing or stale.

    Raises:
        SnapshotError: The files exist but are corrupted or do not fit this
            version of :class:`UserIndex` (the caller deletes and rebuilds).
    """
    header = header if header is not None else read_header(folder, user_id)
    if header is None:
        return None
    if header.get("count") != count or header.get("digest") != digest or header.get("token") != token:
        return None
    index = UserIndex(dim)
    if header.get("signature") != _signature(index):
        raise SnapshotError("snapshot was written by another version of UserIndex")
    npz_path = folder / f"{snapshot_key(user_id)}.npz"
    try:
        with np.load(npz_path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        if arrays.pop("nonce").tobytes().hex() != header.get("nonce"):
            raise SnapshotError("snapshot arrays and header come from different writes")
        _restore(index, header, arrays, user_id)
    except SnapshotError:
        raise
    except (OSError, ValueError, KeyError, TypeError, IndexError, zipfile.BadZipFile) as exc:
        raise SnapshotError(f"corrupted snapshot: {type(exc).__name__}: {exc}") from exc
    if len(index) != count or index.dim != dim:
        raise SnapshotError("snapshot does not match its header")
    return index


def _restore(index: UserIndex, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray], user_id: str) -> None:
    attrs: Mapping[str, Any] = header["attrs"]
    for name, spec in attrs.items():
        kind, factory = spec["kind"], spec.get("factory")
        if kind == "array":
            val: Any = np.array(arrays[f"a:{name}"])  # writable copy
        elif kind in ("scalar",):
            val = spec["value"]
        elif kind == "set":
            val = set(spec["value"])
        elif kind == "cache":
            val = _table(factory, ())
        elif kind == "intmap":
            val = _table(factory, spec["value"].items())
        elif kind == "counters":
            flat = arrays[f"c:{name}"].tolist()
            items, at = [], 0
            for key, inner in zip(spec["keys"], spec["inner"]):
                items.append((key, Counter(dict(zip(inner, flat[at:at + len(inner)])))))
                at += len(inner)
            val = _table(factory, items)
        elif kind == "lists":
            keys = spec["keys"]
            val = _table(factory, zip(keys, _uncsr(keys, arrays[f"o:{name}"], arrays[f"f:{name}"])))
        elif kind == "pairs":
            keys = spec["keys"]
            a = _uncsr(keys, arrays[f"o:{name}"], arrays[f"f:{name}"])
            b = _uncsr(keys, arrays[f"o2:{name}"], arrays[f"f2:{name}"])
            val = _table(factory, zip(keys, zip(a, b)))
        else:
            raise SnapshotError(f"unknown attribute kind {kind!r}")
        setattr(index, name, val)
    empty: Mapping[str, Any] = MappingProxyType({})
    records = []
    for rid, text, sid, role, ts, seq, ents, md in header["records"]:
        records.append(Record(id=rid, text=text, user_id=user_id, session_id=sid, role=role, timestamp=ts, seq=seq,
                              entities=tuple(ents), metadata=MappingProxyType(md) if md else empty))
    index.records = records
    index.pos = {r.id: p for p, r in enumerate(records)}


def remove(folder: Path, user_id: str) -> None:
    """Delete a user's snapshot (after ``forget``); missing files are fine."""
    key = snapshot_key(user_id)
    for suffix in (".npz", ".json"):
        with contextlib.suppress(OSError):
            (folder / f"{key}{suffix}").unlink()


class SnapshotCache:
    """The engine's snapshots over one store (a no-op when the store names no ``snapshot_dir``).

    Args:
        store: A store with ``snapshot_dir`` (a path or None) and ``ids(collection, where)``.
        min_records: Users with fewer memories are not snapshotted (their
            rebuild from the store is fast anyway).
    """

    def __init__(self, store: Any, *, min_records: int = 1000) -> None:
        folder = getattr(store, "snapshot_dir", None)
        ids = getattr(store, "ids", None)
        self.folder: Path | None = Path(folder) if folder is not None and callable(ids) else None
        self._ids = ids
        self.min_records = min_records
        self._saved: dict[str, str] = {}
        self.loaded = 0
        self.rejected = 0

    @property
    def enabled(self) -> bool:
        """Whether snapshots are read and written."""
        return self.folder is not None

    def restore(self, user_id: str, collection: str, dim: int) -> UserIndex | None:
        """The user's index from a valid snapshot, else None (a bad snapshot is deleted).

        Costs one ids-only store read when a snapshot exists, nothing otherwise.
        """
        if self.folder is None:
            return None
        header = read_header(self.folder, user_id)
        if header is None:
            return None
        assert self._ids is not None
        count, digest = ids_digest(self._ids(collection, {"user_id": user_id}))
        try:
            index = load(self.folder, user_id, dim, count=count, digest=digest, token=None, header=header)
        except SnapshotError:
            index = None
        if index is None:
            self.rejected += 1
            remove(self.folder, user_id)
            return None
        self.loaded += 1
        self._saved[user_id] = digest
        return index

    def save(self, user_id: str, index: UserIndex) -> bool:
        """Write the user's snapshot unless it is small or unchanged since the last save/load."""
        if self.folder is None or len(index) < self.min_records:
            return False
        count, digest = ids_digest(index.pos)
        if self._saved.get(user_id) == digest:
            return False
        try:
            save(self.folder, user_id, index, count=count, digest=digest, token=None)
        except SnapshotError:
            return False
        self._saved[user_id] = digest
        return True

    def invalidate(self, user_id: str) -> None:
        """Drop the user's snapshot (forget, or a text replaced under the same id)."""
        self._saved.pop(user_id, None)
        if self.folder is not None:
            remove(self.folder, user_id)
