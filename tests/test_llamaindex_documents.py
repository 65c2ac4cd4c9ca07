"""LlamaIndex documents go into the corpus through ``nodes_to_documents``; ``add_documents`` says how.

nu52: ``cr.add_documents([llama_index.core.Document(text=..., metadata=...)])`` raised "documents[0] must be a str",
though mappings are accepted too, and nothing said how to pass a LlamaIndex (or LangChain) document. The message now
says what is accepted and how to pass the framework's document it got; the LlamaIndex adapter converts documents
and nodes (text, id, title from ``title`` or ``file_name``, metadata).

Real LlamaIndex classes; the fake engine for the messages, the real model and embedded Chroma for the corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, SimpleDirectoryReader  # noqa: E402
from llama_index.core.schema import NodeWithScore, TextNode  # noqa: E402

import chatrecall.adapters.llamaindex as li  # noqa: E402
from chatrecall import ChatRecall, InvalidInputError  # noqa: E402

ACCEPTED = "must be a str, or a mapping with 'text' (or 'content') and optional 'id', 'title' and 'metadata'"
HANDBOOK = ("Dogs are welcome on Dog Fridays only, on the ground floor, on a lead and with a mat or bed. "
            "Dogs are not allowed on any other day.")


def test_a_llamaindex_document_is_refused_with_what_is_accepted_and_how_to_convert_it(engine: ChatRecall) -> None:
    doc = Document(text=HANDBOOK, metadata={"title": "The Loom handbook"})
    for given in ([doc], doc):  # a single one too (a pydantic model: iterated, it gave its fields)
        with pytest.raises(InvalidInputError) as err:
            engine.add_documents(given)
        message = str(err.value)
        assert message.startswith(f"documents[0] {ACCEPTED}"), message
        assert "got Document" in message and "a LlamaIndex document" in message, message
        assert "chatrecall.adapters.llamaindex.nodes_to_documents(docs)" in message, message
    with pytest.raises(InvalidInputError, match=r"documents\[1\] must be a str, or a mapping") as err:
        engine.add_documents(["fine", TextNode(text="a node")])
    assert "nodes_to_documents" in str(err.value)
    with pytest.raises(InvalidInputError) as err:  # anything else: both ways are named
        engine.add_documents([42])
    assert ACCEPTED in str(err.value) and "nodes_to_documents" in str(err.value), err.value
    assert 'doc.page_content' in str(err.value), err.value
    assert engine.store.count("corpus") == 0


def test_a_langchain_document_is_refused_with_how_to_pass_it(engine: ChatRecall) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document as LangChainDocument

    with pytest.raises(InvalidInputError) as err:
        engine.add_documents([LangChainDocument(page_content=HANDBOOK)])
    message = str(err.value)
    assert message.startswith(f"documents[0] {ACCEPTED}") and "a LangChain document" in message, message
    assert '{"text": doc.page_content, "metadata": doc.metadata}' in message, message


def test_nodes_to_documents_keeps_text_id_title_and_metadata() -> None:
    docs = li.nodes_to_documents([
        Document(text=HANDBOOK, doc_id="loom", metadata={"title": "The Loom handbook", "year": 2026, "draft": None}),
        Document(text="Sprinklers are forbidden.", metadata={"file_name": "water.txt", "file_size": 25}),
        NodeWithScore(node=TextNode(id_="chunk-1", text="Guests pay £10 per day."), score=0.8),
    ])
    assert docs[0] == {"text": HANDBOOK, "id": "loom", "title": "The Loom handbook", "metadata": {"year": 2026}}
    assert docs[1]["title"] == "water.txt" and docs[1]["metadata"] == {"file_name": "water.txt", "file_size": 25}
    assert docs[2] == {"text": "Guests pay £10 per day.", "id": "chunk-1", "metadata": {}}
    assert li.nodes_to_documents(TextNode(id_="one", text="a single node")) == [
        {"text": "a single node", "id": "one", "metadata": {}}]
    assert "nodes_to_documents" in li.__all__


def test_nodes_to_documents_names_what_it_cannot_convert() -> None:
    with pytest.raises(InvalidInputError, match=r"nodes\[0\] \(id 'k'\): metadata\['keywords'\]=\['dogs'\] is a "
                                                r"list.*', '\.join"):
        li.nodes_to_documents([TextNode(id_="k", text="x", metadata={"keywords": ["dogs"]})])
    with pytest.raises(InvalidInputError, match=r"nodes\[1\] is a dict, not a LlamaIndex node"):
        li.nodes_to_documents([TextNode(text="x"), {"text": "y"}])
    with pytest.raises(InvalidInputError, match="nodes=str is invalid"):
        li.nodes_to_documents("some text")  # type: ignore[arg-type]


@pytest.mark.model
def test_documents_loaded_by_llamaindex_are_found_under_their_title_and_replaced_on_reload(
        real_engine: ChatRecall, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "loom_handbook.txt").write_text(HANDBOOK, encoding="utf-8")
    docs = SimpleDirectoryReader(str(folder), filename_as_id=True).load_data()
    ids = real_engine.add_documents(li.nodes_to_documents(docs))
    assert ids
    res = real_engine.retrieve("Can I bring my dog to the Loom on a Friday?", user_id="u", session_id="s",
                               route="corpus")
    found = [i for i in res.items if i.source == "corpus"]
    assert found and "Dog Fridays" in found[0].text, res.explain()
    rec = found[0].record
    assert rec is not None and rec.metadata["title"] == "loom_handbook.txt", rec.metadata
    assert rec.metadata["file_name"] == "loom_handbook.txt" and rec.session_id == docs[0].doc_id
    # loaded again after an edit: the same id (filename_as_id) replaces the old text
    (folder / "loom_handbook.txt").write_text("Dogs are no longer allowed at the Loom.", encoding="utf-8")
    real_engine.add_documents(li.nodes_to_documents(SimpleDirectoryReader(str(folder), filename_as_id=True).load_data()))
    texts = [r.text for r in real_engine.store.get("corpus").records]
    assert texts == ["Dogs are no longer allowed at the Loom."], texts
