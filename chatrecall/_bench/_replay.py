"""Conversation replay: chatrecall as a chatbot would run it, turn by turn.

``chatrecall bench replay PATH`` reads a LoCoMo (``locomo10.json``-style) or
LongMemEval (``longmemeval_s*.json[.gz]``) file, detected from its records,
and replays it through the path :class:`~chatrecall.adapters.langchain.ChatRecallMiddleware`
takes: a user message goes to :meth:`ChatRecall.retrieve` first, then the
turn is stored (``add_many``, with the session's date as its timestamp).

Protocol:

* **Feed.** Each conversation (LoCoMo) or haystack (LongMemEval, one fresh
  user per question) is fed session by session in date order, turn by
  turn. Turns are stored in batches between two retrieval points; this
  gives exactly the stored state of storing each turn with ``add`` after it
  is seen (ids derive from user, session and text; sequence numbers, entity
  keys and timestamps do not depend on the batch; vectors come from one
  cache keyed by text), so every retrieval sees the store as the
  middleware would have left it.
* **Chit-chat.** ``feed_retrieve="all"`` retrieves on every user message
  before storing it; the default ``"sample"`` does so on ``chitchat``
  messages per conversation, evenly spaced (the rest is only stored).
  These messages are the conversation's own turns (LoCoMo: both speakers;
  LongMemEval: user turns), mostly chit-chat that needs no memory: they
  measure tokens per turn and the share routed ``none``.
* **Questions.** After the feed, each question is asked as a chat message
  with the clock at its date (LoCoMo: a day after the last session;
  LongMemEval: ``question_date``), each in a new session of its own
  (``ask_in="new"``: the recent window is empty) or in the last fed session
  (``ask_in="last"``). Questions are not stored.
* **Systems**, all on the same store, embedder and token counter, at every
  retrieval point:

  - ``chatrecall``: :meth:`ChatRecall.retrieve` with its defaults (gate,
    two-phase search, budget, pins, recent window);
  - ``chatrecall_always``: the same with ``route="memory"`` (always search);
  - ``lastN+topk_chatrecall``: the session's recent window (the same last
    N turns chatrecall injects) plus the top k of :meth:`ChatRecall.search`
    (chatrecall's own ranker) not already in the window, for k in a ladder;
  - ``lastN+topk_dense``: the window plus the top k by cosine similarity
    over every stored turn (exact numpy search), same ladder.

* **Metrics.** Evidence recall = share of a question's evidence turns
  (LoCoMo ``evidence`` dia_ids; LongMemEval user turns with ``has_answer``)
  whose record is injected (chatrecall: ``res.items`` + ``res.recent``,
  matched by record id). Tokens = ``res.tokens_used`` (pins + recent window
  + items), for baselines the window's tokens plus the full text of each
  top-k turn, with the engine's token counter. Route shares from
  ``res.route``. Latency p50 / p95 of the call (``retrieve``; for the
  baselines ``recent`` + the ranking); query vectors are computed before the
  timed calls (``embed_query`` time is reported on its own).
* **Equal recall.** For each baseline, the smallest k whose recall reaches
  chatrecall's, with its tokens per turn and the token ratio.

LongMemEval: abstention questions and questions whose evidence is only in
assistant turns are skipped (as in its official retrieval protocol); only
user turns are stored unless ``assistant_turns=True``. A few haystacks hold
sessions dated after the question (hours later, same day; some hold
evidence); they are fed before the question anyway.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chatrecall.core import NotFoundError, RetrievalConfig, Route

from ._common import (
    CachingEmbedder,
    MutableClock,
    embed_cache_dir,
    make_chatrecall,
    mean,
    percentile,
    progress,
    real_embedder,
)

__all__ = [
    "FAMILIES",
    "LADDER",
    "ReplayCase",
    "ReplayQuestion",
    "ReplaySession",
    "ReplayTurn",
    "detect_format",
    "equal_recall",
    "load_replay",
    "run_replay",
]

#: k values of the last-N + top-k baselines.
LADDER = (1, 2, 3, 5, 8, 10, 15, 25, 50)
#: Reference systems (full retrieve) and baseline families (one row per k).
REFERENCES = ("chatrecall", "chatrecall_always")
FAMILIES = ("lastN+topk_chatrecall", "lastN+topk_dense")
ALL_REPLAY_SYSTEMS = (*REFERENCES, *FAMILIES)
ROUTES = tuple(r.value for r in Route)
#: Chit-chat messages per conversation (LoCoMo) / haystack (LongMemEval) by default.
DEFAULT_CHITCHAT = {"locomo": 30, "longmemeval": 4}
#: Single query embeddings timed per run (the rest are embedded in batches).
EMBED_SAMPLE = 30


# ====================================================================== data
@dataclass(frozen=True)
class ReplayTurn:
    """One turn to feed.

    Attributes:
        key: The data set's id of the turn (dia_id, ``"<session>#<i>"``).
        text: What is stored.
        role: Stored role.
        timestamp: POSIX seconds.
        message: The turn as an incoming chat message (None: never asked,
            e.g. an assistant turn).
    """

    key: str
    text: str
    role: str
    timestamp: float
    message: str | None


@dataclass(frozen=True)
class ReplaySession:
    session_id: str
    turns: tuple[ReplayTurn, ...]


@dataclass(frozen=True)
class ReplayQuestion:
    """A question with the keys of its evidence turns and its category / type."""

    qid: str
    text: str
    evidence: tuple[str, ...]
    group: str
    now: float


@dataclass(frozen=True)
class ReplayCase:
    """One user's history (sessions in feeding order) and the questions asked after it."""

    case_id: str
    sessions: tuple[ReplaySession, ...]
    questions: tuple[ReplayQuestion, ...]
    late_sessions: int = 0  # sessions dated after the (first) question

    @property
    def turns(self) -> list[ReplayTurn]:
        return [t for s in self.sessions for t in s.turns]


def _read_json(path: Path) -> Any:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def detect_format(data: Any) -> str:
    """``"locomo"`` or ``"longmemeval"`` from the first record's fields.

    Raises:
        ValueError: Neither format.
    """
    if isinstance(data, list) and data and isinstance(data[0], Mapping):
        rec = data[0]
        if "conversation" in rec and "qa" in rec:
            return "locomo"
        if "haystack_sessions" in rec and "question" in rec:
            return "longmemeval"
    raise ValueError("not a LoCoMo (conversation + qa) or LongMemEval (haystack_sessions) file")


def _locomo_cases(path: Path, limit: int | None) -> tuple[list[ReplayCase], dict[str, Any]]:
    from ._locomo import CATEGORIES, load_locomo

    convs = load_locomo(path, limit)
    cases = []
    for c in convs:
        by_session: dict[str, list[ReplayTurn]] = {}
        for key, text, meta in zip(c.keys, c.texts, c.meta):
            role = str(meta["role"])
            msg = text[len(role) + 2:] if text.startswith(role + ": ") else text
            by_session.setdefault(str(meta["session_id"]), []).append(
                ReplayTurn(key, text, role, float(meta["timestamp"]), msg.strip() or None))
        questions = tuple(
            ReplayQuestion(f"{c.sample_id}/q{i}", q.question, tuple(q.evidence),
                           f"cat{q.category} {CATEGORIES.get(q.category, '?')}", c.now)
            for i, q in enumerate(c.questions))
        sessions = tuple(ReplaySession(sid, tuple(ts)) for sid, ts in by_session.items())
        cases.append(ReplayCase(c.sample_id, sessions, questions))
    info = {"skipped_questions_no_evidence": sum(c.skipped_questions for c in convs),
            "dropped_evidence_ids": sum(c.dropped_evidence for c in convs)}
    return cases, info


def _lme_cases(data: list[dict[str, Any]], assistant_turns: bool) -> tuple[list[ReplayCase], dict[str, Any]]:
    from ._longmemeval import lme_sessions, parse_lme_date

    cases = []
    skipped = {"abstention": 0, "assistant_only_evidence": 0}
    for rec in data:
        qid = str(rec["question_id"])
        if qid.endswith("_abs"):
            skipped["abstention"] += 1
            continue
        now = parse_lme_date(rec.get("question_date") or rec["haystack_dates"][-1])
        raw = [(ts, n, sid, sess) for n, (sid, ts, sess) in enumerate(lme_sessions(rec))]
        raw.sort(key=lambda x: (x[0], x[1]))  # date order; the file's order breaks ties
        sessions = []
        evidence = []
        for ts, _, sid, sess in raw:
            turns = []
            for i, turn in enumerate(sess):
                role = str(turn.get("role"))
                content = str(turn.get("content", "")).strip()
                if not content or (role != "user" and not assistant_turns):
                    continue
                key = f"{sid}#{i}"
                turns.append(ReplayTurn(key, content, role, ts + 60.0 * i, content if role == "user" else None))
                if role == "user" and turn.get("has_answer"):
                    evidence.append(key)
            if turns:
                sessions.append(ReplaySession(sid, tuple(turns)))
        if not evidence:
            skipped["assistant_only_evidence"] += 1
            continue
        q = ReplayQuestion(qid, str(rec["question"]), tuple(evidence), str(rec["question_type"]), now)
        cases.append(ReplayCase(qid, tuple(sessions), (q,), late_sessions=sum(1 for x in raw if x[0] > now)))
    return cases, {"skipped": skipped}


def load_replay(path: str | Path, *, limit: int | None = None,
                assistant_turns: bool = False) -> tuple[str, list[ReplayCase], dict[str, Any]]:
    """Read a LoCoMo or LongMemEval file into replay cases.

    Args:
        path: ``locomo10.json``-style or ``longmemeval_s*.json[.gz]``.
        limit: Only the first N conversations (LoCoMo) or records
            (LongMemEval, before unscorable ones are skipped).
        assistant_turns: LongMemEval: store assistant turns too.
        sentence_vectors: chatrecall's engine with ``RetrievalConfig(sentence_vectors=True)``.

    Returns:
        The format name, the cases, and facts about skipped data.
    """
    p = Path(path)
    data = _read_json(p)
    fmt = detect_format(data)
    if fmt == "locomo":
        cases, info = _locomo_cases(p, limit)
    else:
        cases, info = _lme_cases(data[:limit] if limit else data, assistant_turns)
    return fmt, cases, info


# ====================================================================== systems
class _ReplayEmbedder(CachingEmbedder):
    """The harness's caching embedder, plus query vectors computed in batches.

    For a symmetric model (a query embeds exactly as a document, as
    all-MiniLM-L6-v2 does: checked on a probe text), the messages and
    questions are embedded as one document batch, which also lands in the
    on-disk vector cache, so a rerun embeds nothing. Other models embed each
    query on its own. Either way every vector is ready before the timed calls.
    """

    _symmetric: bool | None = None

    def symmetric(self) -> bool:
        if self._symmetric is None:
            probe = "Did we talk about the trip to Lisbon last week?"
            q = np.asarray(self.base.embed_query(probe), dtype=np.float32)
            d = np.asarray(self.base.embed_documents([probe]), dtype=np.float32)[0]
            self._symmetric = bool(q.shape == d.shape and np.allclose(q, d, atol=1e-4))
        return self._symmetric

    def prime_queries(self, texts: Sequence[str], timings: list[float], sample: int) -> None:
        """Make ``texts`` query-cached; time up to ``sample`` single ``embed_query`` calls of the model."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._queries]
        for t in todo[:max(sample, 0)]:
            t0 = time.perf_counter()
            self.base.embed_query(t)
            timings.append((time.perf_counter() - t0) * 1e3)
        if todo and self.symmetric():
            for t, v in zip(todo, self.embed_documents(todo)):
                self._queries[t] = np.asarray(v, dtype=np.float32)
        else:
            for t in todo:
                self.embed_query(t)


class _DenseIndex:
    """Exact cosine search over the turns stored so far (the dense baseline)."""

    def __init__(self, dim: int) -> None:
        self.ids: list[str] = []
        self.seen: set[str] = set()
        self.tokens: list[int] = []
        self._rows: list[np.ndarray] = []
        self._mat = np.zeros((0, dim), dtype=np.float32)

    def add(self, ids: Sequence[str], vecs: np.ndarray, tokens: Sequence[int]) -> None:
        if ids:
            self.ids.extend(ids)
            self.seen.update(ids)
            self.tokens.extend(tokens)
            self._rows.append(np.asarray(vecs, dtype=np.float32))

    def rank(self, qvec: np.ndarray, k: int, exclude: set[str]) -> list[tuple[str, int]]:
        if self._rows:
            self._mat = np.vstack([self._mat, *self._rows])
            self._rows = []
        if not self.ids:
            return []
        sims = self._mat @ qvec
        n = min(k + len(exclude), sims.size)
        part = np.argpartition(-sims, n - 1)[:n]
        order = part[np.argsort(-sims[part], kind="stable")]
        out = [(self.ids[i], self.tokens[i]) for i in order.tolist() if self.ids[i] not in exclude]
        return out[:k]


@dataclass
class _Obs:
    """What one system injected, message by message (parallel lists)."""

    tokens: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    routes: list[str] = field(default_factory=list)
    gate: list[str] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)


def _ladder_name(family: str, n: int, k: int) -> str:
    return f"last{n}+top{k}_{family.rsplit('_', 1)[1]}"


def _recall(injected: set[str], evidence_ids: Sequence[str | None]) -> float:
    return sum(1 for e in evidence_ids if e is not None and e in injected) / len(evidence_ids)


class _Runner:
    """Feeds one engine and measures every system at each retrieval point."""

    def __init__(self, engine: Any, emb: CachingEmbedder, systems: Sequence[str], ks: Sequence[int]) -> None:
        self.engine = engine
        self.emb = emb
        self.systems = list(systems)
        self.ks = tuple(sorted(ks))
        self.n = engine.retrieval_config.recent_turns
        self.q: dict[str, _Obs] = defaultdict(_Obs)  # questions, by system (ladder rows by name)
        self.chat: dict[str, _Obs] = defaultdict(_Obs)  # chit-chat messages
        self.details: list[dict[str, Any]] = []
        self.keep_details = False

    def measure(self, user: str, session: str, message: str, dense: _DenseIndex, *,
                evidence: Sequence[str | None] | None = None, group: str = "", qid: str = "") -> None:
        """Ask ``message`` of every system; a question when ``evidence`` (record ids) is given."""
        eng = self.engine
        out = self.q if evidence is not None else self.chat
        row: dict[str, Any] = {"qid": qid, "message": message}
        kmax = self.ks[-1]
        # Untimed warm-up: the replay's clock jumps (days between sessions), which makes the next call
        # resync the user's index and reload pins; that cost must not land on whichever system goes first.
        eng.pins(user)
        eng.recent(user, session)
        for name in self.systems:
            if name in REFERENCES:
                t0 = time.perf_counter()
                res = eng.retrieve(message, user_id=user, session_id=session,
                                   route=Route.MEMORY if name == "chatrecall_always" else None)
                ms = (time.perf_counter() - t0) * 1e3
                got = {it.id for it in (*res.items, *res.recent)}
                obs = out[name]
                obs.tokens.append(float(res.tokens_used))
                obs.routes.append(res.route.value)
                obs.gate.append(res.gate.route.value)
                obs.ms.append(ms)
                obs.groups.append(group)
                if evidence is not None:
                    obs.recall.append(_recall(got, evidence))
                row[name] = {"tokens": res.tokens_used, "route": res.route.value, "injected": sorted(got),
                             "recall": obs.recall[-1] if evidence is not None else None}
                continue
            t0 = time.perf_counter()
            window = eng.recent(user, session)
            win_ids = {it.id for it in window}
            if name == "lastN+topk_chatrecall":
                items = eng.search(message, user_id=user, k=kmax + len(window))
                ranked = [(it.id, it.tokens) for it in items if it.id not in win_ids][:kmax]
            else:
                ranked = dense.rank(self.emb.embed_query(message), kmax, win_ids)
            ms = (time.perf_counter() - t0) * 1e3
            win_tokens = sum(it.tokens for it in window)
            for k in self.ks:
                top = ranked[:k]
                got = win_ids | {rid for rid, _ in top}
                obs = out[_ladder_name(name, self.n, k)]
                obs.tokens.append(float(win_tokens + sum(t for _, t in top)))
                obs.ms.append(ms)
                obs.groups.append(group)
                if evidence is not None:
                    obs.recall.append(_recall(got, evidence))
            row[name] = {"window": sorted(win_ids), "ranked": [rid for rid, _ in ranked]}
        if evidence is not None and self.keep_details:
            self.details.append(row)

    def feed(self, case: ReplayCase, user: str, clock: MutableClock, ask: set[int],
             dense: _DenseIndex) -> dict[str, str]:
        """Store the case's turns in order, measuring chit-chat at the turns in ``ask``.

        Returns:
            Turn key -> record id.
        """
        key_id: dict[str, str] = {}
        pos = 0
        for sess in case.sessions:
            pending: list[ReplayTurn] = []
            for turn in sess.turns:
                if pos in ask and turn.message:
                    self._store(user, sess.session_id, pending, key_id, dense)
                    pending = []
                    clock.t = turn.timestamp
                    self.measure(user, sess.session_id, turn.message, dense)
                pending.append(turn)
                pos += 1
            clock.t = sess.turns[-1].timestamp if sess.turns else clock.t
            self._store(user, sess.session_id, pending, key_id, dense)
        return key_id

    def _store(self, user: str, session: str, turns: Sequence[ReplayTurn], key_id: dict[str, str],
               dense: _DenseIndex) -> None:
        if not turns:
            return
        ids = self.engine.add_many([{"text": t.text, "user_id": user, "session_id": session, "role": t.role,
                                     "timestamp": t.timestamp} for t in turns])
        fresh: dict[str, str] = {}
        for t, rid in zip(turns, ids):
            key_id[t.key] = rid
            if rid not in dense.seen and rid not in fresh:
                fresh[rid] = t.text
        if fresh:
            texts = list(fresh.values())
            count = self.engine.token_counter.count
            dense.add(list(fresh), self.emb.embed_documents(texts), [max(count(t), 1) for t in texts])



def _chitchat_points(case: ReplayCase, count: int | None) -> set[int]:
    """Positions (in feeding order) of the turns asked as messages: all (None) or ``count`` evenly spaced."""
    turns = case.turns
    if count is None:
        return {i for i, t in enumerate(turns) if t.message}
    cand = [i for i, t in enumerate(turns) if t.message and i > 0]  # the first turn meets an empty store
    if count >= len(cand):
        return set(cand)
    if count <= 0:
        return set()
    step = len(cand) / count
    return {cand[int(step * j + step / 2)] for j in range(count)}


# ====================================================================== summary
def _share(routes: Sequence[str], route: str) -> float:
    return sum(r == route for r in routes) / len(routes) if routes else float("nan")


def _summarise(runner: _Runner) -> dict[str, dict[str, float]]:
    names = [n for n in runner.systems if n in REFERENCES]
    for fam in (n for n in runner.systems if n in FAMILIES):
        names += [_ladder_name(fam, runner.n, k) for k in runner.ks]
    out: dict[str, dict[str, float]] = {}
    for name in names:
        q, c = runner.q.get(name, _Obs()), runner.chat.get(name, _Obs())
        m: dict[str, float] = {
            "recall": mean(q.recall),
            "tokens_per_turn": mean(q.tokens),
            "tokens_p95": percentile(q.tokens, 95),
        }
        if name in REFERENCES:
            for r in ROUTES:
                m[f"route_{r}"] = _share(q.routes, r)
            for r in ROUTES:
                m[f"gate_{r}"] = _share(q.gate, r)
        m["p50_ms"] = percentile(q.ms, 50)
        m["p95_ms"] = percentile(q.ms, 95)
        m["chitchat_tokens_per_turn"] = mean(c.tokens)
        if name in REFERENCES:
            m["chitchat_route_none"] = _share(c.routes, "none")
            m["chitchat_p50_ms"] = percentile(c.ms, 50)
            m["chitchat_p95_ms"] = percentile(c.ms, 95)
        for g in sorted(set(q.groups)):
            m[f"recall_{g}"] = mean(r for r, gg in zip(q.recall, q.groups) if gg == g)
        m["questions"] = float(len(q.recall))
        m["chitchat_messages"] = float(len(c.tokens))
        out[name] = m
    return out


def equal_recall(systems: Mapping[str, Mapping[str, float]], *, n: int,
                 ks: Sequence[int] = LADDER) -> list[dict[str, Any]]:
    """For each reference system and baseline family: the smallest k whose recall reaches the reference's.

    Returns rows with that k, both recalls and token counts and the token
    ratio (baseline tokens / reference tokens). When no k reaches it, the
    largest k is reported with ``reached`` False.
    """
    rows = []
    for ref in REFERENCES:
        r = systems.get(ref)
        if r is None:
            continue
        for fam in FAMILIES:
            ladder = [(k, systems[_ladder_name(fam, n, k)]) for k in sorted(ks) if _ladder_name(fam, n, k) in systems]
            if not ladder:
                continue
            hit = next(((k, m) for k, m in ladder if m["recall"] >= r["recall"] - 1e-9), None)
            k, m = hit or ladder[-1]
            interp = float("nan")  # tokens where the ladder's recall line crosses the reference's recall
            if hit is not None:
                below = [(kk, mm) for kk, mm in ladder if kk < k]
                if not below:
                    interp = m["tokens_per_turn"]
                else:
                    m0 = below[-1][1]
                    span = m["recall"] - m0["recall"]
                    frac = (r["recall"] - m0["recall"]) / span if span > 0 else 1.0
                    interp = m0["tokens_per_turn"] + frac * (m["tokens_per_turn"] - m0["tokens_per_turn"])
            rows.append({
                "comparison": f"{ref} vs {_ladder_name(fam, n, k)}",
                "reference": ref, "baseline": _ladder_name(fam, n, k), "k": k, "reached": hit is not None,
                "reference_recall": r["recall"], "baseline_recall": m["recall"],
                "reference_tokens": r["tokens_per_turn"], "baseline_tokens": m["tokens_per_turn"],
                "token_ratio": m["tokens_per_turn"] / r["tokens_per_turn"] if r["tokens_per_turn"] else float("nan"),
                "baseline_tokens_interp": interp,
                "token_ratio_interp": interp / r["tokens_per_turn"] if r["tokens_per_turn"] else float("nan"),
                "chitchat_reference_tokens": r["chitchat_tokens_per_turn"],
                "chitchat_baseline_tokens": m["chitchat_tokens_per_turn"],
            })
    return rows


# ====================================================================== run
def run_replay(
    path: str | Path,
    *,
    limit: int | None = None,
    max_questions: int | None = None,
    systems: str | Sequence[str] | None = None,
    store: str = "chroma",
    embedder: Any = None,
    chitchat: int | None = None,
    feed_retrieve: str = "sample",
    ask_in: str = "new",
    assistant_turns: bool = False,
    sentence_vectors: bool | None = None,
    ks: Sequence[int] = LADDER,
    details: bool = False,
    console: Any = None,
) -> dict[str, Any]:
    """Replay a LoCoMo or LongMemEval file; returns the result dict (see :func:`write_outputs`).

    Args:
        path: LoCoMo or LongMemEval file (detected from its records).
        limit: Only the first N conversations (LoCoMo) / records (LongMemEval).
        max_questions: Only the first N questions of each conversation.
        systems: Subset of ``chatrecall``, ``chatrecall_always``,
            ``lastN+topk_chatrecall``, ``lastN+topk_dense`` (names or a
            comma-separated string; default all).
        store: ``chroma`` (embedded ChromaStore in a temp dir) or ``memory``.
        embedder: An Embedder (default: bundled MiniLM, vectors cached on disk).
        chitchat: Messages per conversation / haystack replayed through every
            system while feeding (default 30 for LoCoMo, 4 for LongMemEval).
        feed_retrieve: ``sample`` (the ``chitchat`` messages) or ``all`` (every
            user message is retrieved on before it is stored).
        ask_in: ``new`` (each question in a session of its own) or ``last``
            (in the last fed session, whose recent window is then injected).
        assistant_turns: LongMemEval: store assistant turns too.
        ks: The k ladder of the last-N + top-k baselines.
        details: Keep every question's injected ids in ``result["details"]``.

    Raises:
        ValueError: Unknown system, option or file format.
    """
    if isinstance(systems, str) or systems is None:
        names = [s.strip() for s in (systems or ",".join(ALL_REPLAY_SYSTEMS)).split(",") if s.strip()]
    else:
        names = list(systems)
    bad = [s for s in names if s not in ALL_REPLAY_SYSTEMS]
    if bad or not names:
        raise ValueError(f"unknown system(s) {bad}; known: {', '.join(ALL_REPLAY_SYSTEMS)}")
    if feed_retrieve not in ("sample", "all"):
        raise ValueError(f"feed_retrieve={feed_retrieve!r}: use 'sample' or 'all'")
    if ask_in not in ("new", "last"):
        raise ValueError(f"ask_in={ask_in!r}: use 'new' or 'last'")
    fmt, cases, info = load_replay(path, limit=limit, assistant_turns=assistant_turns)
    if max_questions is not None:
        cases = [ReplayCase(c.case_id, c.sessions, c.questions[:max_questions], c.late_sessions) for c in cases]
    per_case = None if feed_retrieve == "all" else (DEFAULT_CHITCHAT[fmt] if chitchat is None else chitchat)

    base = embedder if embedder is not None else real_embedder()
    emb = _ReplayEmbedder(base, disk_dir=embed_cache_dir() if embedder is None else None)
    clock = MutableClock()
    engine, store_desc = make_chatrecall(emb, store=store, clock=clock,
                                         retrieval=None if sentence_vectors is None else RetrievalConfig(
                                             sentence_vectors=sentence_vectors))
    runner = _Runner(engine, emb, names, ks)
    runner.keep_details = details
    embed_ms: list[float] = []
    phase: dict[str, float] = defaultdict(float)
    stored = 0
    t_start = time.perf_counter()
    n_q = sum(len(c.questions) for c in cases)
    with progress(console) as prog:
        task = prog.add_task("replay", total=len(cases))
        for ci, case in enumerate(cases):
            user = f"replay-{case.case_id}"
            turns = case.turns
            prog.update(task, description=f"replay {case.case_id}: embedding {len(turns)} turns")
            t0 = time.perf_counter()
            emb.embed_documents([t.text for t in turns])
            ask = _chitchat_points(case, per_case)
            # query vectors first: the timed calls then measure retrieval, not the model
            emb.prime_queries([m for i in sorted(ask) if (m := turns[i].message)] + [q.text for q in case.questions],
                              embed_ms, EMBED_SAMPLE - len(embed_ms))
            phase["embed"] += time.perf_counter() - t0
            with contextlib.suppress(NotFoundError):  # a leftover of an interrupted run
                engine.forget(user)
            prog.update(task, description=f"replay {case.case_id}: feeding {len(turns)} turns, {len(ask)} asked")
            t0 = time.perf_counter()
            dense = _DenseIndex(emb.dim)
            key_id = runner.feed(case, user, clock, ask, dense)
            stored += len(dense.ids)
            phase["feed"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            prog.update(task, description=f"replay {case.case_id}: {len(case.questions)} questions")
            last = case.sessions[-1].session_id if case.sessions else "replay-last"
            for qi, q in enumerate(case.questions):
                clock.t = q.now
                session = last if ask_in == "last" else f"replay-q{qi}"
                runner.measure(user, session, q.text, dense, evidence=[key_id.get(e) for e in q.evidence],
                               group=q.group, qid=q.qid)
            phase["questions"] += time.perf_counter() - t0
            engine.forget(user)
            prog.advance(task)
            if ci % 10 == 9:
                emb.save()
    emb.save()
    engine.close()

    results = _summarise(runner)
    eq = equal_recall(results, n=runner.n, ks=ks)
    n_chat = len(runner.chat[names[0]].tokens) if names else 0
    label = "LoCoMo" if fmt == "locomo" else "LongMemEval"
    result: dict[str, Any] = {
        "benchmark": "replay",
        "format": fmt,
        "title": f"Conversation replay ({label}): evidence recall and tokens injected per turn",
        "description": (
            f"{len(cases)} {'conversations' if fmt == 'locomo' else 'haystacks'} of {Path(path).name} fed turn by "
            f"turn (retrieve, then store, as ChatRecallMiddleware does), then {n_q} questions asked as chat messages "
            f"({'each in a new session' if ask_in == 'new' else 'in the last fed session'}). "
            "recall = share of a question's evidence turns injected; tokens = everything injected (pins + recent "
            f"window + memories). last{runner.n}+topk = the recent window chatrecall uses plus the top k by "
            "chatrecall's own ranker (search) or by dense cosine. Same store, embedder and token counter for every "
            f"system. chatrecall store: {store_desc}."
        ),
        "dataset": {"path": str(path), "format": fmt, "cases": len(cases), "questions": n_q,
                    "turns_fed": sum(len(c.turns) for c in cases), "records_stored": stored,
                    "chitchat_messages": n_chat, "feed_retrieve": feed_retrieve, "ask_in": ask_in,
                    "assistant_turns_stored": bool(assistant_turns) if fmt == "longmemeval" else True,
                    "cases_with_sessions_after_question": sum(c.late_sessions > 0 for c in cases), **info},
        "store": store_desc,
        "recent_turns": runner.n,
        "ladder": list(runner.ks),
        "systems": results,
        "equal_recall": eq,
        "embed_query_ms": {"p50": percentile(embed_ms, 50), "p95": percentile(embed_ms, 95), "n": len(embed_ms)},
        "seconds": round(time.perf_counter() - t_start, 1),
        "seconds_by_phase": {k: round(v, 1) for k, v in phase.items()},
    }
    if details:
        result["details"] = runner.details
    result["tables"] = _tables(results, eq, runner)
    result["notes"] = [
        f"Chit-chat: {n_chat} of the data's own user messages replayed through every system while feeding "
        f"({'all of them' if per_case is None else f'{per_case} per case, evenly spaced'}); they have no "
        "evidence, so only tokens, routes and latency are reported.",
        "Latency excludes the query embedding (computed before the timed calls): a single embed_query took p50 "
        f"{percentile(embed_ms, 50):.1f} ms, p95 {percentile(embed_ms, 95):.1f} ms here ({len(embed_ms)} timed). "
        "Baseline latency = recent window + one ranking at the largest k (shared by every k).",
        f"Equal recall: the smallest k of {list(runner.ks)} whose recall is >= the reference's; token_ratio = "
        "baseline tokens / reference tokens per question turn.",
        f"Embedding: {emb.doc_misses} turn texts embedded by the model, {emb.doc_hits} lookups answered from the "
        "cache (this run or an earlier one).",
    ]
    return result


def _tables(results: Mapping[str, Mapping[str, float]], eq: Sequence[Mapping[str, Any]],
            runner: _Runner) -> list[dict[str, Any]]:
    main_cols = ["recall", "tokens_per_turn", "tokens_p95", *(f"route_{r}" for r in ROUTES),
                 *(f"gate_{r}" for r in ROUTES), "p50_ms", "p95_ms", "chitchat_tokens_per_turn", "chitchat_route_none"]
    cols = [c for c in main_cols if any(c in m for m in results.values())]
    tables: list[dict[str, Any]] = [{
        "title": "Questions as chat turns: evidence recall, tokens injected, routes, latency",
        "note": (f"last{runner.n}+topk: the session's recent window (empty for a question in a new session) plus "
                 "the top k turns not in it. route_*: the route taken (res.route); gate_*: the gate's own decision "
                 "(res.gate.route; a memory route searches the phase-1 top 3, both the full top k). chitchat_*: the "
                 "data's own messages replayed while feeding."),
        "columns": cols,
        "rows": [{"system": n, **m} for n, m in results.items()],
    }]
    if eq:
        tables.append({
            "title": "Equal recall: the cheapest k at which each baseline recalls as much as chatrecall",
            "first": "comparison",
            "note": ("baseline_tokens_interp: tokens where the line between the two ladder steps around the "
                     "reference's recall reaches it (the ladder is coarse); token_ratio = baseline / reference."),
            "columns": ["reached", "reference_recall", "baseline_recall", "reference_tokens", "baseline_tokens",
                        "token_ratio", "baseline_tokens_interp", "token_ratio_interp", "chitchat_reference_tokens",
                        "chitchat_baseline_tokens"],
            "rows": list(eq),
        })
    groups = sorted({g for obs in runner.q.values() for g in obs.groups})
    if len(groups) > 1:
        shown = [n for n in REFERENCES if n in results] + list(dict.fromkeys(r["baseline"] for r in eq))
        tables.append({
            "title": "Evidence recall per question category / type",
            "columns": groups,
            "note": "questions: " + ", ".join(
                f"{g} {sum(x == g for x in next(iter(runner.q.values())).groups)}" for g in groups),
            "rows": [{"system": n, **{g: results[n].get(f"recall_{g}") for g in groups}} for n in shown],
        })
    return tables
