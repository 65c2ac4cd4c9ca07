"""In-process index of one user's memories: BM25, entity index and graph.

The index is a cache: everything in it can be rebuilt from the store
(records carry their entity keys, timestamps and sequence numbers). All
scoring methods return dense numpy arrays over index positions so the
engine can fuse components without a Python loop over candidates.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from ._types import Record

__all__ = ["UserIndex", "tokenize"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|\d+", re.UNICODE)
_STOP = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "then", "so", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "is", "are", "was", "were", "be", "been", "being", "am", "i", "me", "my", "mine", "we", "us", "our", "you", "your", "yours", "he", "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "this", "that", "these", "those", "do", "does", "did", "doing", "have", "has", "had", "having", "not", "no", "yes", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "there", "here", "about", "into", "over", "under", "again", "very", "just", "also", "than", "too", "only", "own", "same", "such", "up", "down", "out", "off", "all", "any", "both", "each", "few", "more", "most", "other", "some", "s", "t", "don", "let", "lets", "let's", "i'm", "it's", "that's", "you're", "we're"]
)


def _stem(w: str) -> str:
    # Cheap plural/verb folding: good enough for BM25 recall, no dictionary.
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith("ing"):
        return w[:-3]
    if len(w) > 3 and w.endswith("ed") and not w.endswith("eed"):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def tokenize(text: str) -> list[str]:
    """BM25 terms: casefolded words minus stopwords, lightly stemmed."""
    out = []
    for w in _WORD.findall(text.casefold()):
        w = w.replace("’", "'")
        if w.endswith("'s"):
            w = w[:-2]
        if w and w not in _STOP:
            out.append(_stem(w))
    return out


class UserIndex:
    """BM25 + entity index + turn graph over one user's memories.

    Positions are stable until :meth:`remove`, which rebuilds the index.

    Example:
        >>> idx = UserIndex(dim=4)
        >>> len(idx)
        0
    """

    K1 = 1.2
    B = 0.75

    def __init__(self, dim: int, *, max_entity_fanout: int = 64) -> None:
        self.dim = dim
        self.max_entity_fanout = max_entity_fanout
        self.records: list[Record] = []
        self.pos: dict[str, int] = {}
        self._emb = np.zeros((0, dim), dtype=np.float32)
        self._ts = np.zeros(0, dtype=np.float64)
        self._dl = np.zeros(0, dtype=np.float32)
        self._n_emb = 0
        # term -> (positions, tfs) as growing lists; arrays materialised lazily per term
        self._post: dict[str, tuple[list[int], list[int]]] = {}
        self._post_np: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._ent: dict[str, list[int]] = defaultdict(list)
        self._cooc: dict[str, Counter[str]] = defaultdict(Counter)
        self._sessions: dict[str, list[int]] = defaultdict(list)
        self._dirty_sessions: set[str] = set()
        self._prev = np.zeros(0, dtype=np.int64)
        self._next = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ write
    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, rid: object) -> bool:
        return rid in self.pos

    @property
    def embeddings(self) -> np.ndarray:
        return self._emb[: self._n_emb]

    @property
    def timestamps(self) -> np.ndarray:
        return self._ts[: len(self.records)]

    def add(self, records: Sequence[Record], embeddings: np.ndarray) -> list[int]:
        """Add records not yet indexed; returns their positions (existing ones too)."""
        out: list[int] = []
        new: list[tuple[Record, np.ndarray]] = []
        for rec, vec in zip(records, embeddings):
            p = self.pos.get(rec.id)
            if p is None:
                p = len(self.records) + len(new)
                self.pos[rec.id] = p
                new.append((rec, vec))
            out.append(p)
        if not new:
            return out
        start = len(self.records)
        self._grow(start + len(new))
        for off, (rec, vec) in enumerate(new):
            p = start + off
            self.records.append(rec)
            self._emb[p] = vec
            self._ts[p] = rec.timestamp
            terms = Counter(tokenize(rec.text))
            self._dl[p] = sum(terms.values())
            for t, tf in terms.items():
                lst = self._post.get(t)
                if lst is None:
                    lst = self._post[t] = ([], [])
                lst[0].append(p)
                lst[1].append(tf)
                self._post_np.pop(t, None)
            keys = rec.entities[:24]  # cap: co-occurrence is quadratic in entities per turn
            for k in keys:
                self._ent[k].append(p)
                c = self._cooc[k]
                for other in keys:
                    if other != k:
                        c[other] += 1
            self._sessions[rec.session_id].append(p)
            self._dirty_sessions.add(rec.session_id)
        self._n_emb = len(self.records)
        return out

    def _grow(self, n: int) -> None:
        cap = self._emb.shape[0]
        if n <= cap:
            return
        new_cap = max(n, int(cap * 1.5) + 64)
        emb = np.zeros((new_cap, self.dim), dtype=np.float32)
        emb[:cap] = self._emb
        self._emb = emb
        self._ts = np.resize(self._ts, new_cap)
        self._dl = np.resize(self._dl, new_cap)

    def remove(self, ids: Iterable[str]) -> int:
        """Drop records by id (rebuilds the index); returns how many were dropped."""
        drop = {i for i in ids if i in self.pos}
        if not drop:
            return 0
        keep = [(r, self._emb[p]) for p, r in enumerate(self.records) if r.id not in drop]
        self.__init__(self.dim, max_entity_fanout=self.max_entity_fanout)  # type: ignore[misc]
        if keep:
            self.add([r for r, _ in keep], np.stack([v for _, v in keep]))
        return len(drop)

    # ------------------------------------------------------------------ graph
    def _link(self) -> None:
        """Recompute NEXT edges of sessions that changed since the last query."""
        n = len(self.records)
        if self._prev.shape[0] != n:
            prev = np.full(n, -1, dtype=np.int64)
            nxt = np.full(n, -1, dtype=np.int64)
            m = self._prev.shape[0]
            prev[:m] = self._prev
            nxt[:m] = self._next
            self._prev, self._next = prev, nxt
        for sid in self._dirty_sessions:
            members = self._sessions[sid]
            members.sort(key=lambda p: (self.records[p].timestamp, self.records[p].seq))
            arr = np.asarray(members, dtype=np.int64)
            self._prev[arr] = -1
            self._next[arr] = -1
            if arr.size > 1:
                self._prev[arr[1:]] = arr[:-1]
                self._next[arr[:-1]] = arr[1:]
        self._dirty_sessions.clear()

    def session_positions(self, session_id: str) -> np.ndarray:
        """Positions of a session's turns in conversation order."""
        self._link()
        return np.asarray(self._sessions.get(session_id, []), dtype=np.int64)

    def neighbours(self, seeds: np.ndarray, seed_scores: np.ndarray, depth: int,
                   *, decay: float = 0.5, frontier_cap: int = 64) -> tuple[np.ndarray, np.ndarray]:
        """Graph expansion from ``seeds`` over NEXT and shared-entity edges.

        Breadth-first to ``depth`` hops; a node's score is the best
        ``seed_score * decay**hops`` reaching it, plus a connectivity bonus
        for nodes reached from several places.

        Returns:
            (graph score per position, hop count per position; -1 = unreached)
        """
        n = len(self.records)
        score = np.zeros(n, dtype=np.float32)
        hops = np.full(n, -1, dtype=np.int64)
        if n == 0 or depth <= 0 or seeds.size == 0:
            return score, hops
        self._link()
        conn = np.zeros(n, dtype=np.float32)
        hops[seeds] = 0
        frontier, fscore = seeds.astype(np.int64), seed_scores.astype(np.float32)
        for h in range(1, depth + 1):
            parts = [self._prev[frontier], self._next[frontier]]
            srcs = [frontier, frontier]
            sparts = [fscore * decay, fscore * decay]
            # Shared rare entities: common ones (speaker names) would link everything.
            for p, s in zip(frontier[:16].tolist(), fscore[:16].tolist()):
                for key in self.records[p].entities:
                    plist = self._ent.get(key)
                    if plist and len(plist) <= self.max_entity_fanout:
                        parts.append(np.asarray(plist, dtype=np.int64))
                        srcs.append(np.full(len(plist), p, dtype=np.int64))
                        sparts.append(np.full(len(plist), s * decay * 0.6, dtype=np.float32))
            nb = np.concatenate(parts)
            src = np.concatenate(srcs)
            sc = np.concatenate(sparts)
            # New nodes only; a seed counts when another seed reaches it in one hop.
            ok = (nb >= 0) & (nb != src)
            seen = hops[np.where(ok, nb, 0)]
            ok &= (seen < 0) | ((seen == 0) & (h == 1))
            nb, sc = nb[ok], sc[ok]
            if nb.size == 0:
                break
            np.maximum.at(score, nb, sc)
            np.add.at(conn, nb, 1.0)
            fresh = np.unique(nb[hops[nb] < 0])
            hops[fresh] = h
            if fresh.size > frontier_cap:
                fresh = fresh[np.argpartition(-score[fresh], frontier_cap - 1)[:frontier_cap]]
            frontier, fscore = fresh, score[fresh]
        bonus = np.minimum(np.log1p(np.maximum(conn - 1.0, 0.0)) * 0.1, 0.3)
        return np.minimum(score * (1.0 + bonus), 1.0), hops

    # ------------------------------------------------------------------ scoring
    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        arr = self._post_np.get(term)
        if arr is None:
            lst = self._post.get(term)
            if lst is None:
                return None
            arr = (np.asarray(lst[0], dtype=np.int64), np.asarray(lst[1], dtype=np.float32))
            self._post_np[term] = arr
        return arr

    def bm25(self, query: str) -> np.ndarray:
        """Okapi BM25 score of every position for ``query`` (0 where no term matches)."""
        n = len(self.records)
        scores = np.zeros(n, dtype=np.float32)
        if n == 0:
            return scores
        dl = self._dl[:n]
        avgdl = float(dl.mean()) or 1.0
        for term, qtf in Counter(tokenize(query)).items():
            post = self._postings(term)
            if post is None:
                continue
            docs, tf = post
            df = docs.size
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            denom = tf + self.K1 * (1.0 - self.B + self.B * dl[docs] / avgdl)
            np.add.at(scores, docs, qtf * idf * tf * (self.K1 + 1.0) / denom)
        return scores

    def entity_scores(self, keys: Sequence[str], *, related_k: int = 5) -> tuple[np.ndarray, list[str]]:
        """Entity component per position, and the related entities used.

        A memory scores the idf-weighted share of the query's entities it
        mentions; memories mentioning entities that co-occur with the query's
        entities score half as much.
        """
        n = len(self.records)
        scores = np.zeros(n, dtype=np.float32)
        related: list[str] = []
        if n == 0 or not keys:
            return scores, related
        known = [k for k in dict.fromkeys(keys) if k in self._ent]
        if not known:
            return scores, related
        idf = {k: math.log(1.0 + n / len(self._ent[k])) for k in known}
        total = sum(idf.values())
        for k in known:
            np.add.at(scores, np.asarray(self._ent[k], dtype=np.int64), idf[k] / total)
        for k in known:
            for other, _ in self._cooc[k].most_common(related_k):
                if other in idf or other in related:
                    continue
                related.append(other)
                plist = self._ent[other]
                if len(plist) <= self.max_entity_fanout:
                    rel = np.zeros(n, dtype=np.float32)
                    rel[np.asarray(plist, dtype=np.int64)] = 0.5 * idf[k] / total
                    scores = np.maximum(scores, np.where(scores > 0, scores, rel))
        return np.minimum(scores, 1.0), related

    def known(self, keys: Iterable[str]) -> list[str]:
        """The keys among ``keys`` that some indexed memory mentions."""
        return [k for k in keys if k in self._ent]

    def recency(self, now: float, half_life_s: float) -> np.ndarray:
        """exp(-ln2 * age / half_life) per position, 1.0 for the newest possible."""
        age = np.maximum(now - self.timestamps, 0.0)
        return np.exp(-math.log(2.0) * age / half_life_s).astype(np.float32)
