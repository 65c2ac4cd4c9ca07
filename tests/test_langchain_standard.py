"""LangChain's standard retriever suite on ChatRecallRetriever, over real Chroma and the real model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain_tests")
pytest.importorskip("chromadb")

from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

from chatrecall import ChatRecall  # noqa: E402
from chatrecall.adapters.langchain import ChatRecallRetriever  # noqa: E402

pytestmark = pytest.mark.model

# The standard suite's one async test carries no marker and pytest-asyncio runs in
# strict mode here; mark that function (not the module: sync tests would warn).
# Marking it in place keeps it identical to the base class's, as the suite demands.
if not any(m.name == "asyncio" for m in getattr(RetrieversIntegrationTests.test_ainvoke_returns_documents,
                                                "pytestmark", [])):
    pytest.mark.asyncio(RetrieversIntegrationTests.test_ainvoke_returns_documents)

TURNS = [
    ("We moved the billing service to Postgres 16 last sprint", "user"),
    ("Got it: billing now runs on Postgres 16.", "assistant"),
    ("The frontend team picked Svelte for the dashboard", "user"),
    ("Deploys go through Helm charts on the staging cluster", "user"),
    ("My manager Dana wants the invoice export done by Friday", "user"),
    ("Redis caches the product catalog for ten minutes", "user"),
]


class TestChatRecallRetrieverStandard(RetrieversIntegrationTests):
    """The retriever over a user with six stored turns; a second user must never leak in."""

    engine: ChatRecall

    @pytest.fixture(autouse=True, scope="class")
    def _engine(self, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                st_embedder: Any) -> Iterator[None]:
        from chatrecall.adapters.chroma import ChromaStore

        store = ChromaStore(path=tmp_path_factory.mktemp("lc-standard") / "chroma")
        cr = ChatRecall(store=store, embedder=st_embedder)
        cr.add_many({"text": t, "user_id": "alice", "session_id": "s1", "role": r} for t, r in TURNS)
        cr.add("Alice's billing database password rotation is on Mondays", user_id="bob", session_id="b1")
        request.cls.engine = cr
        try:
            yield
        finally:
            cr.close()
            store.close()

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return ChatRecallRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"engine": self.engine, "user_id": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "which database does billing use?"

    def test_other_users_memory_never_returned(self) -> None:
        """Not part of the standard suite: bob's turn about billing must not reach alice."""
        docs = ChatRecallRetriever(engine=self.engine, user_id="alice", k=10).invoke(
            "Alice's billing database password rotation")
        assert len(docs) == len(TURNS)
        assert all(d.metadata["user_id"] == "alice" for d in docs)
        assert "Postgres" in docs[0].page_content or "Postgres" in docs[1].page_content
