"""Adapters: one module per third-party library (``chroma``, ``sentence_transformers``,
``tiktoken``, ``transformers``, ``langchain``, ``llamaindex``). Each converts types and calls
:mod:`chatrecall.core`; importing one without its extra raises an ImportError naming the extra.
"""
