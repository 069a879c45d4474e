"""Extracted facts as plain data, below every package that produces or reads them:

- ``triples``: ``Mention``, ``ExtractedTriple``, ``ExtractionOutput`` and their text form;
- ``parse``: the tolerant reader of triples out of an LLM reply.

The offline extractor (``kgviz.offline``), the extraction task (``kgviz.tasks``) and the index
build (``kgviz.index``) all use them; nothing here imports any other kgviz package. Import the
submodules directly.
"""
