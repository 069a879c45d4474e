"""Turn caller rows (list of dicts, pandas DataFrame or pyarrow Table) into a pyarrow Table whose
columns match a Kùzu table's columns exactly, in order and type, ready for ``COPY ... FROM $t``.

Kept apart from store.py because it needs no kuzu: it is plain data shaping. Two Kùzu facts drive
it (measured on 0.11.3): COPY matches columns by *position*, not by name, so every column of the
table must be present in schema order; and pandas 3's default string dtype crashes COPY, so
nothing pandas-typed ever reaches Kùzu — only pyarrow arrays built here.
"""
from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa

from kgviz.errors import GraphStoreError

Rows: TypeAlias = Sequence[Mapping[str, Any]] | pd.DataFrame | pa.Table

_SCALAR_TYPES: dict[str, pa.DataType] = {
    "STRING": pa.string(),
    "INT64": pa.int64(),
    "INT32": pa.int32(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "BOOL": pa.bool_(),
    "BOOLEAN": pa.bool_(),
}
_VECTOR_TYPE = re.compile(r"^FLOAT\[(\d+)\]$")


def vector_dim(kuzu_type: str) -> int | None:
    """The dimension of a ``FLOAT[n]`` column type, or None for any other type."""
    match = _VECTOR_TYPE.match(kuzu_type)
    return int(match.group(1)) if match else None


def is_float_type(kuzu_type: str) -> bool:
    return kuzu_type in ("DOUBLE", "FLOAT") or vector_dim(kuzu_type) is not None


def column_sources(rows: Rows) -> tuple[dict[str, Any], int]:
    """Split rows into {column name: column values} and the row count."""
    if isinstance(rows, pa.Table):
        return {name: rows.column(name) for name in rows.column_names}, rows.num_rows
    if isinstance(rows, pd.DataFrame):
        return {str(name): rows[name] for name in rows.columns}, len(rows)
    rows = list(rows)
    names: dict[str, None] = {}
    for row in rows:
        for name in row:
            names.setdefault(name, None)
    return {name: [row.get(name) for row in rows] for name in names}, len(rows)


def build_table(
    sources: Mapping[str, Any], n_rows: int, schema: Sequence[tuple[str, str]], *, what: str
) -> pa.Table:
    """A pyarrow Table with exactly the columns of ``schema`` ([(name, kuzu type)], in order).

    Columns missing from ``sources`` become nulls; a source column the schema does not know is an
    error (it is almost always a typo that would otherwise drop data silently).
    """
    known = {name for name, _ in schema}
    unknown = sorted(set(sources) - known)
    if unknown:
        raise GraphStoreError(
            f"{what}: unknown column(s) {unknown}; the table's columns are {[n for n, _ in schema]}"
        )
    arrays = []
    for name, kuzu_type in schema:
        values = sources.get(name)
        arrays.append(_typed_array(values, n_rows, kuzu_type, what=f"{what}.{name}"))
    return pa.Table.from_arrays(arrays, names=[name for name, _ in schema])


def _typed_array(values: Any, n_rows: int, kuzu_type: str, *, what: str) -> pa.Array:
    dim = vector_dim(kuzu_type)
    if values is None:
        arrow_type = pa.list_(pa.float32(), dim) if dim else _scalar_type(kuzu_type, what)
        return pa.nulls(n_rows, type=arrow_type)
    if dim is not None:
        return embedding_array(values, dim, what=what)
    arrow_type = _scalar_type(kuzu_type, what)
    try:
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            array = values.cast(arrow_type)
            return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
        return pa.array(values, type=arrow_type, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as err:
        raise GraphStoreError(f"{what}: values do not fit the column type {kuzu_type}: {err}") from err


def _scalar_type(kuzu_type: str, what: str) -> pa.DataType:
    try:
        return _SCALAR_TYPES[kuzu_type]
    except KeyError:
        raise GraphStoreError(f"{what}: column type {kuzu_type} is not supported by bulk loads") from None


def embedding_array(values: Any, dim: int, *, what: str) -> pa.FixedSizeListArray:
    """FLOAT[dim] column from a 2-D numpy array or a sequence of vectors / None (null)."""
    if isinstance(values, pa.ChunkedArray) and values.num_chunks == 1:
        values = values.chunk(0)
    if isinstance(values, pa.FixedSizeListArray) and values.type == pa.list_(pa.float32(), dim) \
            and values.null_count == 0 and values.offset == 0:
        # already the column (the write stage's, made on the batch's vectors without a copy:
        # issue 29, a 131k-row batch of 768-d vectors is 400 MB)
        if not np.isfinite(values.values.to_numpy(zero_copy_only=True)).all():
            raise GraphStoreError(f"{what}: embeddings contain NaN or infinite values")
        return values
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pylist()
    elif isinstance(values, pd.Series):
        values = values.tolist()
    if isinstance(values, np.ndarray) and values.ndim == 2:
        if values.shape[1] != dim:
            raise GraphStoreError(f"{what}: embeddings have dimension {values.shape[1]}, the graph uses {dim}")
        matrix = np.ascontiguousarray(values, dtype=np.float32)
        mask = np.zeros(len(matrix), dtype=bool)
    elif (items := list(values)) and all(isinstance(v, np.ndarray) and v.shape == (dim,) for v in items):
        # one vector per row, none missing (the build's rows): one stack instead of a copy per row
        # (issue 29: a fifth of the write stage at 10k passages), the same float32 values
        matrix = np.stack(items).astype(np.float32, copy=False)
        mask = np.zeros(len(items), dtype=bool)
    else:
        matrix = np.zeros((len(items), dim), dtype=np.float32)
        mask = np.zeros(len(items), dtype=bool)
        for i, item in enumerate(items):
            if item is None or (isinstance(item, float) and math.isnan(item)):
                mask[i] = True
                continue
            vector = np.asarray(item, dtype=np.float32).ravel()
            if vector.shape != (dim,):
                raise GraphStoreError(
                    f"{what}: row {i} has an embedding of dimension {vector.size}, the graph uses {dim}"
                )
            matrix[i] = vector
    if not np.isfinite(matrix).all():
        raise GraphStoreError(f"{what}: embeddings contain NaN or infinite values")
    return pa.FixedSizeListArray.from_arrays(
        pa.array(matrix.ravel()), dim, mask=pa.array(mask) if mask.any() else None
    )


def vectors_to_numpy(column: pa.ChunkedArray | pa.Array, dim: int) -> np.ndarray:
    """(n, dim) float32 matrix from a FLOAT[dim] result column that holds no nulls."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(array) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    flat = array.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(len(array), dim)
