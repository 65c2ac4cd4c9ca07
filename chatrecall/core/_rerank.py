"""Hybrid re-ranking of externally retrieved candidates (numpy and stdlib only).

The framework adapters (LlamaIndex node postprocessor, LangChain document
compressor) hand chatrecall the passages some other retriever found; this
module scores them with the same components the engine uses on memories
(relevance, BM25 keyword, entity overlap, recency), fuses them with the
hybrid weights, then applies near-duplicate suppression and the token budget
through :func:`select_items`. The adapters only convert types.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ._budget import select_items, tier_of
from ._config import DEFAULT_WEIGHTS, BudgetConfig, RetrievalConfig
from ._errors import InvalidInputError
from ._index import tokenize
from ._protocols import Embedder, EntityExtractor, TokenCounter
from ._ranking import topk as _topk
from ._tokens import as_token_counter
from ._tuned import BM25_B as _B
from ._tuned import BM25_K1 as _K1
from ._types import ScoredItem

__all__ = ["Candidate", "rerank"]

_COMPONENTS = ("recency", "relevance", "keyword", "entity", "graph")
_BUDGET = BudgetConfig()


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A passage found by an upstream retriever, to be re-ranked.

    Example:
        >>> Candidate(id="n1", text="We deploy with Helm", score=0.71).score
        0.71

    Attributes:
        id: Unique id (the node / document id); duplicates keep the first.
        text: The passage text.
        score: The upstream retriever's score (any scale), or None.
        timestamp: Unix time of the passage, enables the recency component.
        embedding: A vector in the space of the ``embedder`` given to
            :func:`rerank`; texts without one are embedded there.
        source: Label carried into :attr:`ScoredItem.source`.
    """

    id: str
    text: str
    score: float | None = None
    timestamp: float | None = None
    embedding: np.ndarray | None = None
    source: str = "corpus"

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InvalidInputError(f"Candidate.id must be a non-empty str, got {self.id!r}")
        if not isinstance(self.text, str):
            raise InvalidInputError(f"Candidate.text of {self.id!r} must be a str, got {type(self.text).__name__}")
        if self.score is not None and not _finite(self.score):
            raise InvalidInputError(f"Candidate.score of {self.id!r} must be a finite number or None, got {self.score!r}")
        if self.timestamp is not None and not _finite(self.timestamp):
            raise InvalidInputError(
                f"Candidate.timestamp of {self.id!r} must be a finite unix time or None, got {self.timestamp!r}"
            )
        if self.embedding is not None:
            emb = np.asarray(self.embedding, dtype=np.float32)
            if emb.ndim != 1 or emb.size == 0 or not np.all(np.isfinite(emb)):
                raise InvalidInputError(
                    f"Candidate.embedding of {self.id!r} must be a finite 1-D vector, got shape {emb.shape}"
                )
            object.__setattr__(self, "embedding", emb)


def _bm25(query: str, texts: Sequence[str]) -> tuple[np.ndarray, bool]:
    """BM25 of every text for ``query`` over the candidate set, scaled to max 1; (scores, query has terms)."""
    n = len(texts)
    qtf = Counter(tokenize(query))
    if not qtf:
        return np.zeros(n, dtype=np.float32), False
    col = {t: j for j, t in enumerate(qtf)}
    docs = [tokenize(t) for t in texts]
    dl = np.fromiter((len(d) for d in docs), dtype=np.float32, count=n)
    # One (row, col) pair per query-term occurrence; np.add.at builds the tf matrix in one call.
    pairs = [(i, col[w]) for i, d in enumerate(docs) for w in d if w in col]
    tf = np.zeros((n, len(col)), dtype=np.float32)
    if pairs:
        rows, cols = np.asarray(pairs, dtype=np.int64).T
        np.add.at(tf, (rows, cols), 1.0)
    df = np.count_nonzero(tf, axis=0).astype(np.float32)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    avgdl = float(dl.mean()) or 1.0
    denom = tf + _K1 * (1.0 - _B + _B * dl[:, None] / avgdl)
    q = np.fromiter(qtf.values(), dtype=np.float32, count=len(qtf))
    scores = (q * idf * tf * (_K1 + 1.0) / denom).sum(axis=1)
    top = float(scores.max()) if n else 0.0
    return (scores / top if top > 0 else scores).astype(np.float32), True


def _entity(query_keys: Sequence[str], cand_keys: Sequence[frozenset[str]]) -> np.ndarray:
    """Idf-weighted share of the query's entities each candidate mentions (as in the engine's index)."""
    n = len(cand_keys)
    if not query_keys or n == 0:
        return np.zeros(n, dtype=np.float32)
    present = np.asarray([[k in keys for k in query_keys] for keys in cand_keys], dtype=np.float32)
    df = present.sum(axis=0)
    known = df > 0
    if not known.any():
        return np.zeros(n, dtype=np.float32)
    idf = np.where(known, np.log1p(n / np.maximum(df, 1.0)), 0.0)
    return np.minimum(present @ (idf / idf.sum()), 1.0).astype(np.float32)


def _upstream(scores: np.ndarray) -> np.ndarray:
    """Upstream scores on 0..1: kept when already there (cosine), else max- or min-max-scaled."""
    have = ~np.isnan(scores)
    s = scores[have]
    if s.min() >= 0.0 and s.max() <= 1.0:
        out = scores
    elif s.min() >= 0.0:
        out = scores / s.max()
    else:
        span = float(s.max() - s.min())
        out = (scores - s.min()) / span if span > 0 else np.where(have, 1.0, np.nan)
    return np.nan_to_num(out, nan=0.0).astype(np.float32)


def _relevance(query: str, cands: Sequence[Candidate], embedder: Embedder) -> np.ndarray:
    qvec = np.asarray(embedder.embed_query(query), dtype=np.float32)
    missing = [i for i, c in enumerate(cands) if c.embedding is None]
    fresh = embedder.embed_documents([cands[i].text for i in missing]) if missing else None
    dim = qvec.shape[0]
    mat = np.zeros((len(cands), dim), dtype=np.float32)
    if fresh is not None:
        mat[missing] = np.asarray(fresh, dtype=np.float32)
    for i, c in enumerate(cands):
        if c.embedding is not None:
            if c.embedding.shape[0] != dim:
                raise InvalidInputError(
                    f"Candidate.embedding of {c.id!r} has dimension {c.embedding.shape[0]}, "
                    f"but the embedder produces {dim}"
                )
            mat[i] = c.embedding
    # Given embeddings need not be normalised; cosine needs unit rows.
    norms = np.linalg.norm(mat, axis=1)
    unit = mat / np.where(norms > 0, norms, 1.0)[:, None]
    qn = float(np.linalg.norm(qvec)) or 1.0
    return np.clip(unit @ (qvec / qn), 0.0, 1.0).astype(np.float32)


def _why(comps: Mapping[str, float], rank: int | None, shared: Sequence[str], cosine: bool) -> str:
    parts = []
    if rank is not None:
        parts.append(f"upstream #{rank}")
    if cosine and comps.get("relevance", 0.0) > 0:
        parts.append(f"cosine {comps['relevance']:.2f}")
    if comps.get("keyword", 0.0) > 0:
        parts.append(f"keyword {comps['keyword']:.2f}")
    if shared:
        parts.append("entity " + ",".join(shared[:3]))
    if comps.get("recency", 0.0) > 0:
        parts.append(f"recency {comps['recency']:.2f}")
    return "; ".join(parts) or "no evidence"


def rerank(
    query: str,
    candidates: Sequence[Candidate],
    *,
    embedder: Embedder | None = None,
    weights: Mapping[str, float] | None = None,
    extractor: EntityExtractor | None = None,
    token_counter: TokenCounter | object = None,
    budget_tokens: int | None = None,
    top_n: int | None = None,
    diversity_threshold: float = 0.8,
    now: float | None = None,
    half_life_s: float = 7 * 24 * 3600.0,
) -> list[ScoredItem]:
    """Re-rank upstream candidates with chatrecall's hybrid score, diversity and budget.

    Components, each on 0..1:

    * ``relevance``: cosine between query and candidate when ``embedder`` is
      given, else the upstream score (kept if already on 0..1, else scaled);
    * ``keyword``: BM25 over the candidate set, divided by the best;
    * ``entity``: idf-weighted share of the query's entities a candidate mentions;
    * ``recency``: ``exp(-ln2 * age / half_life_s)`` when timestamps are given.

    Components that have no signal (no embedder and no upstream score, no
    query terms, no query entities, no timestamps; ``graph`` always) are left
    out and the remaining weights renormalised, so a missing signal never
    drags every score down. Then items are taken best first, dropping
    near-duplicates (word-set Jaccard >= ``diversity_threshold``) and what
    does not fit ``budget_tokens``, up to ``top_n``.

    Example:
        >>> from chatrecall.core._rerank import Candidate, rerank
        >>> cands = [Candidate(id="a", text="The cat sat", score=0.9),
        ...          Candidate(id="b", text="Postgres runs billing", score=0.5)]
        >>> [it.id for it in rerank("which database runs billing?", cands)]
        ['b', 'a']

    Args:
        query: The query the candidates were retrieved for.
        candidates: Upstream results, in upstream order.
        embedder: Enables the cosine relevance component.
        weights: Hybrid weights per component (default ``DEFAULT_WEIGHTS``).
        extractor: Entity extractor (default: the regex extractor).
        token_counter: Anything :func:`as_token_counter` accepts.
        budget_tokens: Token cap of everything returned (None: no cap).
        top_n: At most this many items (None: no cap).
        diversity_threshold: Jaccard similarity at which an item counts as a
            near-duplicate of one already taken (1.0 drops exact word-set
            duplicates only).
        now: Reference time of the recency component (default: now).
        half_life_s: Recency half-life.

    Returns:
        The selected items, best first; ``components`` holds every component
        that contributed, ``why`` a short explanation.

    Raises:
        InvalidInputError: Bad query, candidate or argument (names the value).
        ConfigError: Invalid ``weights``.
    """
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError(f"query must be a non-empty str, got {query!r}")
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
        raise InvalidInputError(f"candidates must be a sequence of Candidate, got {type(candidates).__name__}")
    for i, c in enumerate(candidates):
        if not isinstance(c, Candidate):
            raise InvalidInputError(f"candidates[{i}] must be a Candidate, got {type(c).__name__}")
    if budget_tokens is not None and (not isinstance(budget_tokens, int) or isinstance(budget_tokens, bool)
                                      or budget_tokens < 0):
        raise InvalidInputError(f"budget_tokens={budget_tokens!r} is invalid: must be an int >= 0 or None")
    if top_n is not None and (not isinstance(top_n, int) or isinstance(top_n, bool) or top_n < 1):
        raise InvalidInputError(f"top_n={top_n!r} is invalid: must be an int >= 1 or None")
    if not _finite(diversity_threshold) or not 0.0 <= diversity_threshold <= 1.0:
        raise InvalidInputError(f"diversity_threshold={diversity_threshold!r} is invalid: must be between 0 and 1")
    if not _finite(half_life_s) or half_life_s <= 0:
        raise InvalidInputError(f"half_life_s={half_life_s!r} is invalid: must be a positive number")
    if now is not None and not _finite(now):
        raise InvalidInputError(f"now={now!r} is invalid: must be a finite unix time")
    w = RetrievalConfig(weights=weights).weights if weights is not None else DEFAULT_WEIGHTS
    if extractor is None:
        from ._entities import RegexEntityExtractor  # deferred: only needed when the caller brings none

        extractor = RegexEntityExtractor()
    counter = as_token_counter(token_counter)

    seen: set[str] = set()
    cands = [c for c in candidates if not (c.id in seen or seen.add(c.id))]  # type: ignore[func-returns-value]
    n = len(cands)
    if n == 0:
        return []
    texts = [c.text for c in cands]

    comp: dict[str, np.ndarray] = {}
    upstream = np.asarray([np.nan if c.score is None else c.score for c in cands], dtype=np.float64)
    if embedder is not None:
        comp["relevance"] = _relevance(query, cands, embedder)
    elif not np.isnan(upstream).all():
        comp["relevance"] = _upstream(upstream)
    keyword, has_terms = _bm25(query, texts)
    if has_terms:
        comp["keyword"] = keyword
    qkeys = list(dict.fromkeys(e.key for e in extractor.extract(query)))
    cand_keys = [frozenset(e.key for e in extractor.extract(t)) for t in texts] if qkeys else []
    if qkeys:
        comp["entity"] = _entity(qkeys, cand_keys)
    ts = np.asarray([np.nan if c.timestamp is None else c.timestamp for c in cands], dtype=np.float64)
    if not np.isnan(ts).all():
        age = np.maximum((time.time() if now is None else now) - ts, 0.0)
        comp["recency"] = np.nan_to_num(np.exp(-math.log(2.0) * age / half_life_s), nan=0.0).astype(np.float32)

    eff = {name: float(w.get(name, 0.0)) for name in _COMPONENTS if name in comp}
    total = sum(eff.values())
    if total <= 0:  # every weighted signal is missing: let the available ones count equally
        eff = dict.fromkeys(comp, 1.0)
        total = float(len(eff))
    eff = {name: v / total for name, v in eff.items() if v > 0}
    final = np.zeros(n, dtype=np.float32)
    for name, v in eff.items():
        final += np.float32(v) * comp[name]

    # Upstream order breaks ties, and gives the "upstream #r" of the explanation.
    rank = {i: r for r, i in enumerate(np.argsort(-np.nan_to_num(upstream, nan=-np.inf), kind="stable").tolist())}
    has_rank = not np.isnan(upstream).all()
    budget = budget_tokens if budget_tokens is not None else 2**62
    # Build items only for the head: diversity may drop some, so widen until top_n are kept.
    m = n if top_n is None else min(n, 2 * top_n + 8)
    while True:
        order = _topk(final, m)
        items = []
        for i in order.tolist():
            comps = {name: float(comp[name][i]) for name in eff}
            shared = [k for k in qkeys if k in cand_keys[i]] if qkeys else []
            score = float(final[i])
            items.append(ScoredItem(
                id=cands[i].id, text=texts[i], source=cands[i].source, score=score, components=comps,
                tokens=counter.count(texts[i]), tier=tier_of(score, _BUDGET),
                why=_why(comps, rank[i] + 1 if has_rank and cands[i].score is not None else None, shared,
                         embedder is not None),
            ))
        sel = select_items(items, budget=budget, config=_BUDGET, diversity_threshold=diversity_threshold)
        if top_n is None or len(sel.selected) >= top_n or m >= n:
            break
        m = min(n, m * 2)
    out = list(sel.selected)
    return out[:top_n] if top_n is not None else out
