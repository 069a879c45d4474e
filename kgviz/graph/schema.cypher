// kgviz graph schema. Applied by kgviz.graph.store on every open; every statement is
// idempotent (IF NOT EXISTS). __DIM__ is replaced by the embedder's dimension (an int).
// Changing a column or a table's shape here requires bumping SCHEMA_VERSION in store.py:
// IF NOT EXISTS adds missing tables but never alters an existing one.

CREATE NODE TABLE IF NOT EXISTS Meta(key STRING PRIMARY KEY, value STRING);

CREATE NODE TABLE IF NOT EXISTS Document(
    id STRING PRIMARY KEY, title STRING, source STRING, sha256 STRING, text STRING,
    n_tokens INT64, emb FLOAT[__DIM__]);

CREATE NODE TABLE IF NOT EXISTS Chunk(
    id STRING PRIMARY KEY, doc_id STRING, ord INT64, text STRING, n_tokens INT64,
    pagerank DOUBLE, core BOOLEAN, emb FLOAT[__DIM__]);

// KET-RAG sub-chunks (tau-token splits of a chunk).
CREATE NODE TABLE IF NOT EXISTS SubChunk(
    id STRING PRIMARY KEY, chunk_id STRING, ord INT64, text STRING, n_tokens INT64,
    emb FLOAT[__DIM__]);

// origin: 'corpus' (extracted) or 'curated' (imported KG); aliases are '|'-joined.
CREATE NODE TABLE IF NOT EXISTS Entity(
    id STRING PRIMARY KEY, name STRING, type STRING, description STRING, origin STRING,
    aliases STRING, n_mentions INT64, emb FLOAT[__DIM__]);

// A triple is a node so that it can be the subject or object of another triple (hypernode).
// One fact, one node: chunk_id/doc_id/sentence are its first provenance; FROM_CHUNK has them all.
// kind: 'relation' (stated: LLM or offline pattern) or 'sentence' (offline co-occurrence fallback).
CREATE NODE TABLE IF NOT EXISTS Triple(
    id STRING PRIMARY KEY, subject STRING, relation STRING, object STRING,
    subject_id STRING, object_id STRING, text STRING, chunk_id STRING, doc_id STRING,
    sentence STRING, origin STRING, kind STRING, emb FLOAT[__DIM__]);

CREATE NODE TABLE IF NOT EXISTS Keyword(
    id STRING PRIMARY KEY, word STRING, description STRING, emb FLOAT[__DIM__]);

// KET-RAG Alg. 1 line 3: an LLM-written description of a skeleton entity or relationship (kind
// 'entity' | 'relationship'; target = its Entity or Triple id), with its own embedding. Only an
// LLM build writes them (kgviz.index.ket_describe); a new table, so no schema version bump.
CREATE NODE TABLE IF NOT EXISTS Description(
    id STRING PRIMARY KEY, target STRING, kind STRING, name STRING, text STRING, chunk_ids STRING,
    prompt_name STRING, mode STRING, emb FLOAT[__DIM__]);

// Extraction provenance per chunk; its presence marks the chunk as done when a build resumes.
CREATE NODE TABLE IF NOT EXISTS Extraction(
    chunk_id STRING PRIMARY KEY, mode STRING, prompt_name STRING, raw STRING, status STRING,
    n_triples INT64, n_malformed INT64, error STRING, input_tokens INT64, output_tokens INT64);

CREATE REL TABLE IF NOT EXISTS HAS_CHUNK(FROM Document TO Chunk);
CREATE REL TABLE IF NOT EXISTS SUB_CHUNK_OF(FROM SubChunk TO Chunk);
CREATE REL TABLE IF NOT EXISTS MENTIONS(FROM Chunk TO Entity);
// Multi-pair rel tables: COPY into them needs explicit from/to tables (the store passes them).
CREATE REL TABLE IF NOT EXISTS SUBJ(FROM Triple TO Entity, FROM Triple TO Triple);
CREATE REL TABLE IF NOT EXISTS OBJ(FROM Triple TO Entity, FROM Triple TO Triple);
// sentence: the sentence of that chunk the fact was read from (its evidence there).
CREATE REL TABLE IF NOT EXISTS FROM_CHUNK(FROM Triple TO Chunk, sentence STRING);
CREATE REL TABLE IF NOT EXISTS RELATED(
    FROM Entity TO Entity, relation STRING, triple_id STRING, origin STRING);
CREATE REL TABLE IF NOT EXISTS SIMILAR_DOC(FROM Document TO Document, weight DOUBLE);
CREATE REL TABLE IF NOT EXISTS KNN(FROM Chunk TO Chunk, kind STRING, weight DOUBLE);
CREATE REL TABLE IF NOT EXISTS HAS_KEYWORD(FROM SubChunk TO Keyword);
