"""chatrecall core: all logic, numpy and the standard library only."""

from ._batch import Batch
from ._budget import Selection, budget_for, select_items
from ._classifier import classify_query
from ._commands import PinCommand, PinCommandResult, apply_pin_command, check_pin_scope, find_pin, parse_pin_command
from ._config import BudgetConfig, PinConfig, RetrievalConfig, StoreLimits
from ._engine import ChatRecall
from ._entities import RegexEntityExtractor, fold_key
from ._errors import (
    ChatRecallError,
    ClosedError,
    ConfigError,
    InvalidArgumentError,
    InvalidInputError,
    NotFoundError,
    PinLimitError,
    StoreError,
    StoreUnavailableError,
)
from ._fakes import ExactVectorIndex, ExactVectorIndexFactory, HashEmbedder
from ._format import format_context
from ._gate import DEFAULT_PATTERNS, Gate, GateConfig, GatePattern
from ._index import UserIndex
from ._memstore import InMemoryStore
from ._metrics import Metrics
from ._protocols import Embedder, EntityExtractor, MemoryStore, TokenCounter, VectorIndex, VectorIndexFactory
from ._rerank import Candidate, rerank
from ._tokens import ApproxTokenCounter, as_token_counter
from ._types import (
    Entity,
    ForgetReport,
    GateDecision,
    GateReason,
    Pin,
    QueryType,
    Record,
    RetrievalResult,
    Route,
    Scalar,
    ScoredItem,
    StoreHit,
    Strategy,
    Turn,
    Where,
)
from ._validate import (
    canonical_role,
    check_id,
    check_k,
    check_keywords,
    check_strategy,
    check_text,
    closest_name,
    keywords_checked,
)

__all__ = [
    "DEFAULT_PATTERNS",
    "ApproxTokenCounter",
    "Batch",
    "BudgetConfig",
    "Candidate",
    "ChatRecall",
    "ChatRecallError",
    "ClosedError",
    "ConfigError",
    "Embedder",
    "Entity",
    "ExactVectorIndex",
    "ExactVectorIndexFactory",
    "EntityExtractor",
    "ForgetReport",
    "Gate",
    "GateConfig",
    "GateDecision",
    "GatePattern",
    "GateReason",
    "HashEmbedder",
    "InMemoryStore",
    "InvalidArgumentError",
    "InvalidInputError",
    "MemoryStore",
    "Metrics",
    "NotFoundError",
    "Pin",
    "PinCommand",
    "PinCommandResult",
    "PinConfig",
    "PinLimitError",
    "QueryType",
    "Record",
    "RegexEntityExtractor",
    "RetrievalConfig",
    "RetrievalResult",
    "Route",
    "Scalar",
    "ScoredItem",
    "Selection",
    "StoreError",
    "StoreHit",
    "StoreLimits",
    "StoreUnavailableError",
    "Strategy",
    "TokenCounter",
    "Turn",
    "UserIndex",
    "VectorIndex",
    "VectorIndexFactory",
    "Where",
    "apply_pin_command",
    "as_token_counter",
    "budget_for",
    "check_id",
    "check_k",
    "canonical_role",
    "check_keywords",
    "check_pin_scope",
    "check_strategy",
    "check_text",
    "classify_query",
    "closest_name",
    "find_pin",
    "fold_key",
    "format_context",
    "keywords_checked",
    "parse_pin_command",
    "rerank",
    "select_items",
]
