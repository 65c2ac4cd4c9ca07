"""chatrecall: the memory layer between a chatbot's user message and its LLM.

Quick start::

    import chatrecall
    cr = chatrecall.connect()            # embedded Chroma + bundled MiniLM, offline
    cr.add("We deploy with Helm", user_id="u1", session_id="s1")
    print(cr.retrieve("what did we say about deploys?", user_id="u1").context)
"""

from __future__ import annotations

from ._connect import connect
from ._version import __version__
from .core import (
    BudgetConfig,
    ChatRecall,
    ChatRecallError,
    ClosedError,
    ConfigError,
    Entity,
    ForgetReport,
    Gate,
    GateConfig,
    GateDecision,
    GatePattern,
    GateReason,
    InvalidArgumentError,
    InvalidInputError,
    NotFoundError,
    Pin,
    PinConfig,
    PinLimitError,
    QueryType,
    Record,
    RetrievalConfig,
    RetrievalResult,
    Route,
    ScoredItem,
    StoreError,
    StoreLimits,
    StoreUnavailableError,
    Strategy,
    Turn,
)

__all__ = [
    "BudgetConfig",
    "ChatRecall",
    "ChatRecallError",
    "ClosedError",
    "ConfigError",
    "Entity",
    "ForgetReport",
    "Gate",
    "GateConfig",
    "GateDecision",
    "GatePattern",
    "GateReason",
    "InvalidArgumentError",
    "InvalidInputError",
    "NotFoundError",
    "Pin",
    "PinConfig",
    "PinLimitError",
    "QueryType",
    "Record",
    "RetrievalConfig",
    "RetrievalResult",
    "Route",
    "ScoredItem",
    "StoreError",
    "StoreLimits",
    "StoreUnavailableError",
    "Strategy",
    "Turn",
    "__version__",
    "connect",
]
