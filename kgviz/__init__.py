"""kgviz: build a knowledge graph from text and watch four KG-RAG methods retrieve over it."""

__version__ = "0.1.0"
