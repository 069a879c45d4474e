"""The graph layer: the only home of Cypher in kgviz (a test greps the rest of the package).

* ``store``        – GraphStore: the only module importing kuzu; lifecycle, locks, bulk COPY, meta.
* ``protocol``     – the ``GraphStore`` Protocol that methods and read functions are typed against.
* ``batching``     – the one rule for id lists (IN / UNWIND / batch size), with its measurements.
* ``reads``        – named reads (chunks, entities, triples, documents, KET layers, gold funnel, UI).
* ``writes``       – named deletes and updates of the index build.
* ``neighbourhood``– kg-rag's fixed hop reads and node lookups.
* ``explore``      – the Explore page's reads.
* ``search``       – vector (HNSW), full-text (BM25) and PageRank search, functions of the store.
* ``arrow``        – arrow tables for COPY and vectors out of arrow columns.
"""
