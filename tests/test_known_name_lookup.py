"""A corpus question that searches memory too only because it names something the user spoke of ("How do I check
Redis latency from the box?" from a user whose Redis cache memory holds) brings the small lookup's few memories, not
a full memory search (criterion C38, stop 36).

helper-112's new-user chat (stop 36, a helper who saw no code): that question injected 8 memories beside the runbook
passage (896 tokens): the user's upload message, the bot's acknowledgements and every turn naming Redis. Real
model, embedded Chroma; written before the change.
"""

from __future__ import annotations

from typing import Any

from _chats import replay_fixture

USER = "omar"
T0 = 1762678800.0  # 2025-11-09 09:00 UTC

RUNBOOKS = [
    {"id": "payments-runbook", "title": "payments-api runbook",
     "text": "payments-api runbook. The service is written in Go and runs on Postgres 16 (one primary, one replica) "
             "behind PgBouncer in transaction mode, with a Redis cache for idempotency keys. Connection errors ('too "
             "many clients', 'connection refused'): first check open connections on the primary with SELECT state, "
             "count(*) FROM pg_stat_activity GROUP BY state. Then run SHOW POOLS; on the PgBouncer admin console. "
             "Draining a pod safely: annotate it with payments.drain=true, wait until GET /internal/inflight returns "
             "0, then delete the pod."},
    {"id": "redis-runbook", "title": "Redis cache runbook",
     "text": "Redis cache runbook. The cache is Redis 7 at cache.internal:6379 with maxmemory 4gb and the allkeys-lru "
             "eviction policy. When memory reaches 100 percent: run INFO memory and INFO stats and check evicted_keys; "
             "find oversized keys with redis-cli --bigkeys. Latency: measure with redis-cli --latency -h "
             "cache.internal and check SLOWLOG GET 20 for slow commands. Never run FLUSHALL in production."},
]
QUESTION = "How do I check Redis latency from the box?"
SESSIONS = [
    (0.0, "o1", [
        ("Morning! Starting my on-call week today, coffee first.", "Good morning! Good luck with the on-call week."),
        ("Our main service is payments-api, it runs on Postgres 16 with a Redis cache in front for idempotency keys "
         "and session lookups.",
         "Noted: payments-api on Postgres 16, with a Redis cache for idempotency keys and sessions."),
        ("Postgres has max_connections set to 200, and the Redis cache has maxmemory 4gb with allkeys-lru.",
         "Thanks: Postgres max_connections 200; Redis maxmemory 4gb, eviction policy allkeys-lru."),
        ("My cat Miso knocked my coffee over the Redis dashboard, classic.", "Ha, Miso has opinions about Redis."),
    ]),
    (7.0, "o3", [
        ("Here's our payments-api runbook and the Redis cache runbook, so you have them.",
         "Thanks, I've got the payments-api runbook and the Redis cache runbook."),
        (QUESTION, "Run redis-cli --latency -h cache.internal, and look at SLOWLOG GET 20 for slow commands."),
    ]),
]

chat = replay_fixture("known_name_lookup", USER, T0, RUNBOOKS, SESSIONS)


def test_a_name_alone_brings_the_small_lookup_not_a_full_search(chat: dict[str, Any]) -> None:
    res = chat[QUESTION]
    memories = [i for i in res.items if i.source == "memory"]
    assert any("--latency" in i.text for i in res.items if i.source == "corpus"), res.explain()
    assert len(memories) <= 3, res.explain()
