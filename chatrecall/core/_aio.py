"""Native async API of :class:`ChatRecall`: the same calls, never blocking the event loop.

Every ``a*`` method runs its synchronous twin on a dedicated, bounded thread
pool owned by the engine (not the loop's default executor, which other
libraries share), so embedding, index scoring and store I/O happen off the
event loop. At most ``max_workers`` calls run at once (set with
:meth:`_AsyncMixin.configure_async`); the others wait in the pool's queue
without holding a thread. Context variables (tracing, request ids) are carried
into the worker thread.

Example:
    >>> import asyncio
    >>> from chatrecall.testing import fake_engine
    >>> cr = fake_engine()
    >>> async def main() -> str:
    ...     await cr.aadd("We use Postgres for billing", user_id="u1", session_id="s1")
    ...     res = await cr.aretrieve("Remember which database we use for billing?", user_id="u1")
    ...     return res.route.value
    >>> asyncio.run(main())
    'memory'
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextvars
import functools
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ._errors import ConfigError
from ._types import ForgetReport, Pin, Record, RetrievalResult, Route, ScoredItem, Strategy, Turn
from ._validate import keywords_checked

if TYPE_CHECKING:
    from ._engine import ChatRecall

__all__ = ["DEFAULT_ASYNC_WORKERS"]

T = TypeVar("T")

#: Default number of engine calls that run at once for the async API.
DEFAULT_ASYNC_WORKERS = 4

_init_lock = threading.Lock()


class _AsyncMixin:
    """The ``a*`` methods of :class:`ChatRecall` (see the module docstring)."""

    _aio_pool: cf.ThreadPoolExecutor | None = None
    _aio_workers: int = DEFAULT_ASYNC_WORKERS

    # ------------------------------------------------------------------ plumbing
    def configure_async(self, *, max_workers: int = DEFAULT_ASYNC_WORKERS) -> None:
        """Set how many async calls may run at once (default 4).

        Calls beyond that wait in a queue (holding no thread). A pool already
        running finishes its queued work; new calls go to the new pool.

        Args:
            max_workers: Concurrent engine calls, 1 to 256. Embedding is
                CPU-bound: more workers than cores adds queueing in threads,
                not throughput.

        Raises:
            ConfigError: ``max_workers`` is not an int from 1 to 256.
        """
        if not isinstance(max_workers, int) or isinstance(max_workers, bool) or not 1 <= max_workers <= 256:
            raise ConfigError(f"max_workers={max_workers!r} is invalid: must be an int from 1 to 256")
        with _init_lock:
            old, self._aio_pool = self._aio_pool, None
            self._aio_workers = max_workers
        if old is not None:
            old.shutdown(wait=False)

    @property
    def async_workers(self) -> int:
        """How many async calls may run at once."""
        return self._aio_workers

    def _executor(self) -> cf.ThreadPoolExecutor:
        pool = self._aio_pool
        if pool is None:
            with _init_lock:
                pool = self._aio_pool
                if pool is None:
                    pool = cf.ThreadPoolExecutor(max_workers=self._aio_workers, thread_name_prefix="chatrecall-aio")
                    weakref.finalize(self, pool.shutdown, wait=False)
                    self._aio_pool = pool
        return pool

    async def _arun(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the engine's async pool and await it."""
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        call = functools.partial(ctx.run, fn, *args, **kwargs)
        return await loop.run_in_executor(self._executor(), call)

    def _sync(self) -> ChatRecall:
        return cast("ChatRecall", self)

    async def aclose(self) -> None:
        """Stop the async pool (after the calls already running) and the engine's threads."""
        with _init_lock:
            pool, self._aio_pool = self._aio_pool, None
        if pool is not None:
            await asyncio.get_running_loop().run_in_executor(None, functools.partial(pool.shutdown, wait=True))
        self._sync().close()

    async def __aenter__(self) -> ChatRecall:
        return self._sync()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ write path
    @keywords_checked
    async def aadd(
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
        """Async :meth:`ChatRecall.add`: store one turn, return its id."""
        return await self._arun(self._sync().add, text, user_id=user_id, session_id=session_id, role=role,
                                timestamp=timestamp, metadata=metadata, defer_if_unavailable=defer_if_unavailable)

    @keywords_checked
    async def aadd_many(self, turns: Iterable[Turn | Mapping[str, Any]], *,
                        defer_if_unavailable: bool = False) -> list[str]:
        """Async :meth:`ChatRecall.add_many`: store many turns in one embedding batch."""
        if not isinstance(turns, (str, bytes, Mapping, Sequence)) and isinstance(turns, Iterable):
            turns = list(turns)  # a generator is consumed here, not in a worker thread
        return await self._arun(self._sync().add_many, turns, defer_if_unavailable=defer_if_unavailable)

    @keywords_checked
    async def aadd_documents(
        self,
        documents: Iterable[str | Mapping[str, Any]],
        *,
        user_id: str | None = None,
        max_words: int = 160,
        overlap_words: int = 30,
    ) -> list[str]:
        """Async :meth:`ChatRecall.add_documents`: chunk and store corpus documents."""
        if not isinstance(documents, (str, bytes, Mapping, Sequence)) and isinstance(documents, Iterable):
            documents = list(documents)
        return await self._arun(self._sync().add_documents, documents, user_id=user_id, max_words=max_words,
                                overlap_words=overlap_words)

    # ------------------------------------------------------------------ read path
    @keywords_checked
    async def aretrieve(
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
        """Async :meth:`ChatRecall.retrieve`: gate, two-phase search and budget."""
        return await self._arun(self._sync().retrieve, message, user_id=user_id, session_id=session_id, k=k,
                                strategy=strategy, route=route, budget_tokens=budget_tokens,
                                include_recent=include_recent, exclude_ids=exclude_ids, as_of=as_of)

    @keywords_checked
    async def asearch(
        self,
        query: str,
        *,
        user_id: str,
        k: int | None = None,
        strategy: Strategy | str | None = None,
        session_id: str | None = None,
    ) -> tuple[ScoredItem, ...]:
        """Async :meth:`ChatRecall.search`: rank the user's memories (no gate, no budget)."""
        return await self._arun(self._sync().search, query, user_id=user_id, k=k, strategy=strategy,
                                session_id=session_id)

    @keywords_checked
    async def ahistory(self, user_id: str, session_id: str, *, cached_if_unavailable: bool = False) -> list[Record]:
        """Async :meth:`ChatRecall.history`: every stored turn of a session, oldest first."""
        return await self._arun(self._sync().history, user_id, session_id,
                                cached_if_unavailable=cached_if_unavailable)

    # ------------------------------------------------------------------ pins and forget
    @keywords_checked
    async def apin(self, text: str, *, user_id: str, session_id: str | None = None) -> Pin:
        """Async :meth:`ChatRecall.pin`: pin a standing constraint."""
        return await self._arun(self._sync().pin, text, user_id=user_id, session_id=session_id)

    @keywords_checked
    async def aunpin(self, pin_id: str | Pin, *, user_id: str | None = None) -> Pin:
        """Async :meth:`ChatRecall.unpin`: remove a pin by id (or the :class:`Pin` itself)."""
        return await self._arun(self._sync().unpin, pin_id, user_id=user_id)

    @keywords_checked
    async def apins(self, user_id: str, session_id: str | None = None, *,
                    cached_if_unavailable: bool = False) -> list[Pin]:
        """Async :meth:`ChatRecall.pins`: the user's pins, oldest first."""
        return await self._arun(self._sync().pins, user_id, session_id, cached_if_unavailable=cached_if_unavailable)

    @keywords_checked
    async def aforget(self, user_id: str, session_id: str | None = None) -> ForgetReport:
        """Async :meth:`ChatRecall.forget`: delete a user's (or one session's) memories and pins."""
        return await self._arun(self._sync().forget, user_id, session_id)
