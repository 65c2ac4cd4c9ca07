"""Corpus retrieval informed by memory: the "both" turn whose document is named only in the past.

A user said weeks ago "I'm running the titration practical with my year 11s on Friday" and now asks
"what should my class watch out for in the practical?". The message matches the titration, the
chromatography and the flame-test documents alike; only the memory says which one. This harness
measures how often the right document comes first.

Data: ``benchmarks/data/corpus_context/*.json``, written for this benchmark before the mechanism
was tuned (each by a separate writer who saw no code): per file a set of documents and 40
scenarios, each a different user with 2-4 past sessions (other topics and casual turns
included), a question asked in a new session, the gold document(s) and the memory turn(s) that
name the topic. 26 scenarios per file are ``implied`` (the question does not name the topic),
14 ``explicit`` (it does: the memory context must not hurt them).

Every configuration runs on the same engine, store, embedder and stored data, in one run: the route
forced to ``both`` (the mechanism alone), then the gate's own route; ``corpus_memory_items`` and
``corpus_recent_context`` per configuration (0 and False: the corpus queried with the message alone, the
behaviour before them and the baseline); each question asked twice, opening a new session and at the end
of the session that named its topic (where that turn may sit in the recent window rather than in memory). The documents of every file share one corpus, so each scenario also meets the other
file's documents.

Metrics per scenario, from the corpus items the retrieve ranked (injected or not): the first gold
document's rank (hit@1, hit@3, MRR over the top ``k``), and whether a gold document was injected.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._common import CachingEmbedder, MutableClock, embed_cache_dir, make_chatrecall, real_embedder

__all__ = ["DATA_DIR", "ContextHarness", "ContextScenario", "ContextSet", "GeneralOutcome", "Outcome", "blind_harness",
           "general_questions", "load_context_set", "summarise"]

DATA_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "corpus_context"
_DAY = 86400.0


@dataclass(frozen=True)
class ContextScenario:
    """One user, their past sessions, a question in a new session and its gold documents."""

    sid: str
    kind: str
    sessions: tuple[tuple[tuple[str, str], ...], ...]  # sessions of (role, text)
    question: str
    gold_docs: frozenset[str]
    evidence: tuple[str, ...] = ()  # the user turns that name the topic

    def evidence_session(self) -> int:
        """Index of the first session holding an evidence turn (the last session when none does)."""
        ev = set(self.evidence)
        return next((n for n, sess in enumerate(self.sessions) if any(t in ev for _, t in sess)),
                    len(self.sessions) - 1)


@dataclass(frozen=True)
class ContextSet:
    name: str
    documents: tuple[tuple[str, str], ...]  # (id, text)
    scenarios: tuple[ContextScenario, ...]

    def document_rows(self) -> list[dict[str, str]]:
        """The set's documents as ``add_documents`` takes them, ids prefixed by the set's name."""
        return [{"id": f"{self.name}:{d}", "text": t} for d, t in self.documents]


def load_context_set(path: str | Path) -> ContextSet:
    """Read one data file (see the module docstring); checks gold ids exist.

    Raises:
        ValueError: A gold document id is not among the file's documents, or a scenario is malformed.
    """
    path = Path(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    docs = tuple((str(d["id"]), str(d["text"])) for d in raw["documents"])
    ids = {d for d, _ in docs}
    scen = []
    for s in raw["scenarios"]:
        gold = frozenset(str(g) for g in s["gold_docs"])
        if not gold or not gold <= ids:
            raise ValueError(f"{path.name} {s['id']}: gold_docs {sorted(gold)} not among the documents")
        if s["kind"] not in ("implied", "explicit"):
            raise ValueError(f"{path.name} {s['id']}: kind {s['kind']!r} is not 'implied' or 'explicit'")
        sessions = tuple(tuple((str(t["role"]), str(t["text"])) for t in sess) for sess in s["sessions"])
        evidence = tuple(str(t) for t in s.get("memory_evidence", ()))
        scen.append(ContextScenario(str(s["id"]), s["kind"], sessions, str(s["question"]), gold, evidence))
    return ContextSet(path.stem, docs, tuple(scen))


@dataclass(frozen=True)
class Outcome:
    """One scenario under one configuration."""

    sid: str
    kind: str
    rank: int | None  # 1-based rank of the first gold document among the ranked corpus items, None if absent
    injected: bool
    route: str
    memory: bool = False  # a memory turn naming the topic reached the prompt (found, or in the recent window)
    passage_tokens: int = 0  # tokens of the corpus passages injected
    other_passage_tokens: int = 0  # of those, the passages that are not a gold document's


@dataclass(frozen=True)
class GeneralOutcome:
    """General questions asked by users whose histories are about other things (see ``run_general``)."""

    n: int
    with_memory: int  # questions given at least one memory
    memory_tokens: int  # memory tokens injected, over all questions
    tokens: int  # tokens injected (memories, passages, recent window), over all questions
    probed: int  # questions whose memory was probed before the corpus
    p50_ms: float = 0.0  # median retrieve latency
    passage_tokens: int = 0  # corpus passage tokens injected, over all questions


class ContextHarness:
    """Stores every set once (real model, embedded Chroma), then scores configurations on it.

    Args:
        sets: The data sets.
        embedder: An Embedder (default: bundled MiniLM, vectors cached on disk).
        store: ``chroma`` (embedded, temp dir) or ``memory``.
    """

    def __init__(self, sets: Sequence[ContextSet], *, embedder: Any = None, store: str = "chroma") -> None:
        base = embedder if embedder is not None else real_embedder()
        self.emb = CachingEmbedder(base, disk_dir=embed_cache_dir() if embedder is None else None)
        self.clock = MutableClock(1_700_000_000.0)
        self.engine, self.store_desc = make_chatrecall(self.emb, store=store, clock=self.clock)
        self.base_config = self.engine.retrieval_config
        self.base_budget = self.engine.budget_config
        self.sets = tuple(sets)
        self._now = self.clock.t
        for cs in self.sets:
            self._store_set(cs)

    @staticmethod
    def user(cs: ContextSet, sc: ContextScenario) -> str:
        return f"ctx-{cs.name}-{sc.sid}"

    def _store_set(self, cs: ContextSet) -> None:
        """Documents (shared by every user of the set, ids prefixed by the set) and each user's sessions."""
        self.engine.add_documents(cs.document_rows())
        turns = []
        for sc in cs.scenarios:
            start = self._now - (len(sc.sessions) + 1) * 7 * _DAY
            for n, sess in enumerate(sc.sessions):
                for j, (role, text) in enumerate(sess):
                    turns.append({"text": text, "user_id": self.user(cs, sc), "session_id": f"{sc.sid}-s{n + 1}",
                                  "role": role, "timestamp": start + n * 7 * _DAY + j * 60.0})
        self.engine.add_many(turns)

    def run(self, *, items: int, recent: bool = False, route: str | None = "both",
            ask_in: str = "new", probe: bool | None = None, mix: str | None = None,
            only: Sequence[str] | None = None, overrides: Mapping[str, Any] | None = None) -> dict[str, list[Outcome]]:
        """Every scenario of every set under one configuration: set name -> outcomes in scenario order.

        Args:
            items: ``corpus_memory_items``.
            recent: ``corpus_recent_context``.
            route: Route forced on the retrieve (None: the gate's).
            ask_in: ``new``: the question opens a new session; ``evidence``: it is asked at the end of the
                session that named the topic (so that turn may be in the recent window, not in memory).
            probe: ``memory_probe`` (None: the engine's default).
            mix: ``BudgetConfig.mix`` (None: the engine's default).
            only: Names of the sets whose scenarios are asked (None: every set; the others' documents stay
                in the corpus).
            overrides: Other ``RetrievalConfig`` fields for this run (``useful_score``...).
        """
        if ask_in not in ("new", "evidence"):
            raise ValueError(f"ask_in={ask_in!r}: use 'new' or 'evidence'")
        eng = self.engine
        self._configure(items=items, recent=recent, probe=probe, mix=mix, overrides=overrides)
        self.clock.t = self._now
        out: dict[str, list[Outcome]] = {}
        try:
            for cs in self.sets:
                if only is not None and cs.name not in only:
                    continue
                rows = out.setdefault(cs.name, [])
                for sc in cs.scenarios:
                    session = f"{sc.sid}-new" if ask_in == "new" else f"{sc.sid}-s{sc.evidence_session() + 1}"
                    self._fresh_session(self.user(cs, sc), session)
                    r = eng.retrieve(sc.question, user_id=self.user(cs, sc), session_id=session, route=route)
                    rows.append(self._outcome(cs, sc, r))
        finally:
            self._configure()
        return out

    def _fresh_session(self, user: str, session: str) -> None:
        """Forget what an earlier run's ask left in the session's routing state (a correction pending, whether the
        turn brought documents): every configuration asks the same question in the same session, and each ask must
        start as the first question of that session does, not as a follow-up to the previous run's."""
        st = self.engine._state(user)
        with st.lock:
            st.correction_pending.discard(session)
            st.corpus_last.pop(session, None)

    def run_general(self, questions: Sequence[str], *, probe: bool | None = None,
                    mix: str | None = None, overrides: Mapping[str, Any] | None = None,
                    only: Sequence[str] | None = None) -> GeneralOutcome:
        """General questions (no reference to the user) asked by the benchmark's users, in new sessions.

        Question ``j`` is asked by the ``j``-th user (round robin; ``only``: the users of these sets), whose
        history is about other things: every memory injected is a cost, not an answer. The engine's own
        constants otherwise.
        """
        users = [self.user(cs, sc) for cs in self.sets if only is None or cs.name in only for sc in cs.scenarios]
        self._configure(probe=probe, mix=mix, overrides=overrides)
        self.clock.t = self._now
        with_memory = memory_tokens = tokens = passage_tokens = 0
        ms: list[float] = []
        probes_before = self.engine.metrics.snapshot()["counters"].get("probes.memory", 0)
        try:
            for j, q in enumerate(questions):
                self._fresh_session(users[j % len(users)], f"general-{j}")
                t = time.perf_counter()
                r = self.engine.retrieve(q, user_id=users[j % len(users)], session_id=f"general-{j}")
                ms.append((time.perf_counter() - t) * 1e3)
                mem = [i for i in r.items if i.source == "memory"]
                with_memory += bool(mem)
                memory_tokens += sum(i.tokens for i in mem)
                passage_tokens += sum(i.tokens for i in r.items if i.source == "corpus")
                tokens += r.tokens_used
        finally:
            self._configure()
        probed = self.engine.metrics.snapshot()["counters"].get("probes.memory", 0) - probes_before
        return GeneralOutcome(len(questions), with_memory, memory_tokens, tokens, probed,
                              float(statistics.median(ms)) if ms else 0.0, passage_tokens)

    def _configure(self, *, items: int | None = None, recent: bool | None = None, probe: bool | None = None,
                   mix: str | None = None, overrides: Mapping[str, Any] | None = None) -> None:
        """Set the engine's configs from the base ones (no argument: restore them)."""
        base = self.base_config
        self.engine.retrieval_config = dataclasses.replace(
            base, corpus_memory_items=base.corpus_memory_items if items is None else items,
            corpus_recent_context=base.corpus_recent_context if recent is None else recent,
            memory_probe=base.memory_probe if probe is None else probe, **dict(overrides or {}))
        self.engine.budget_config = dataclasses.replace(self.base_budget,
                                                        mix=self.base_budget.mix if mix is None else mix)

    @staticmethod
    def _outcome(cs: ContextSet, sc: ContextScenario, r: Any) -> Outcome:
        gold = {f"{cs.name}:{g}" for g in sc.gold_docs}
        ranked = sorted((i for i in (*r.items, *r.rejected) if i.source == "corpus" and i.record is not None),
                        key=lambda i: -i.score)
        docs: list[str] = []
        for i in ranked:
            if i.record.session_id not in docs:
                docs.append(i.record.session_id)
        rank = next((n for n, d in enumerate(docs, 1) if d in gold), None)
        injected = any(i.source == "corpus" and i.record is not None and i.record.session_id in gold
                       for i in r.items)
        evidence = set(sc.evidence)
        memory = any(i.source == "memory" and i.text in evidence for i in r.items) \
            or any(i.text in evidence for i in r.recent)
        passages = [i for i in r.items if i.source == "corpus" and i.record is not None]
        return Outcome(sc.sid, sc.kind, rank, injected, r.route.value, memory,
                       sum(i.tokens for i in passages), sum(i.tokens for i in passages if i.record.session_id not in gold))

    def close(self) -> None:
        self.emb.save()
        self.engine.close()


#: Held-out gate splits whose messages labelled corpus are the general questions (see ``run_general``). blind4
#: (written after the usefulness thresholds were chosen on these) is left out, so that tune_usefulness.py
#: reproduces its constraint on the same questions.
GENERAL_SPLITS = ("validation", "blind", "requests", "blind2", "blind3")


def general_questions() -> list[str]:
    """General questions: the held-out gate splits' messages labelled corpus (no reference to the user)."""
    from ._routes import load_split

    return [m.text for sp in GENERAL_SPLITS for m in load_split(sp) if m.route == "corpus"]


@contextlib.contextmanager
def blind_harness(sets: Sequence[ContextSet], files: Sequence[Path]) -> Iterator[tuple[ContextHarness, list[str]]]:
    """A harness over ``sets`` and the held-out ``files`` (every file's documents in one store), closed on exit.

    Yields:
        The harness and the held-out sets' names (for ``run(only=...)``).
    """
    blind = [load_context_set(f) for f in files]
    h = ContextHarness([*sets, *blind])
    try:
        yield h, [s.name for s in blind]
    finally:
        h.close()


def summarise(outcomes: Sequence[Outcome]) -> dict[str, float]:
    """hit@1, hit@3, MRR, the share with a gold document injected, the share whose memory evidence reached
    the prompt, and the share with both ("complete")."""
    n = len(outcomes)
    if not n:
        return {"n": 0, "hit1": 0.0, "hit3": 0.0, "mrr": 0.0, "injected": 0.0, "memory": 0.0, "complete": 0.0}
    return {
        "n": n,
        "hit1": sum(o.rank == 1 for o in outcomes) / n,
        "hit3": sum(o.rank is not None and o.rank <= 3 for o in outcomes) / n,
        "mrr": sum(1.0 / o.rank for o in outcomes if o.rank) / n,
        "injected": sum(o.injected for o in outcomes) / n,
        "memory": sum(o.memory for o in outcomes) / n,
        "complete": sum(o.injected and o.memory for o in outcomes) / n,
    }
