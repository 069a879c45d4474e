"""The build's spilled vectors (kgviz.index.spill): what goes in comes back, by range and by
gathered rows, and the folder does not outlive the build."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from kgviz.graph import vector_file
from kgviz.index.spill import SPILL_PREFIX, VectorSpill


def test_appended_blocks_read_back_by_range_and_by_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    parts = [rng.normal(size=(n, 8)).astype(np.float32) for n in (5, 1, 0, 9)]
    whole = np.concatenate(parts)
    with VectorSpill(tmp_path, 8) as spill:
        for p in parts:
            spill.append("Triple", p)
        spill.append("Entity", parts[0][:2])
        assert spill.count("Triple") == 15 and spill.count("Entity") == 2 and spill.count("Chunk") == 0
        assert np.array_equal(spill.read("Triple", 0, 15), whole)
        assert np.array_equal(spill.read("Triple", 4, 11), whole[4:11])
        assert np.array_equal(spill.read("Triple", 12, 99), whole[12:])  # cut at the end
        assert spill.read("Chunk", 0, 3).shape == (0, 8)
        rows = spill.rows("Triple")
        assert rows.shape == (15, 8) and rows.ndim == 2
        order = rng.permutation(15)
        assert np.array_equal(rows[order[:7]], whole[order[:7]])
        assert np.array_equal(rows[3:6], whole[3:6])
        assert spill.rows("Chunk")[np.arange(0)].shape == (0, 8)
        with pytest.raises(ValueError):
            spill.append("Triple", np.zeros((2, 7), dtype=np.float32))
        folder = spill.directory
        assert folder.is_dir() and folder.parent == tmp_path
    assert not folder.exists()


def test_a_stale_spill_folder_is_removed_by_the_next_spill(tmp_path: Path) -> None:
    stale = tmp_path / f"{SPILL_PREFIX}killed"
    stale.mkdir()
    (stale / "Triple.f32").write_bytes(b"\0" * 64)
    with VectorSpill(tmp_path, 4) as spill:
        assert not stale.exists() and spill.directory.exists()
    assert not any(tmp_path.iterdir())


def test_vector_files_from_spilled_rows_equal_the_ones_from_a_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index stage writes the exact search's files from the spill (gathered a block at a time):
    byte for byte the files the same vectors in memory give, across several blocks."""
    rng = np.random.default_rng(5)
    n = 3 * 7 + 2
    emb = rng.normal(size=(n, 6)).astype(np.float32)
    emb[::4] /= np.linalg.norm(emb[::4], axis=1, keepdims=True)  # some rows already unit: not copied to stored
    ids = [f"t{int(i):03d}" for i in rng.permutation(n)]
    normalise = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    a, b = tmp_path / "a", tmp_path / "b"
    with VectorSpill(tmp_path, 6) as spill:
        spill.append("Triple", emb[:10])
        spill.append("Triple", emb[10:])
        monkeypatch.setattr(vector_file, "WRITE_BLOCK", 7)
        vector_file.write(a, "Triple", ids, emb, normalise)
        vector_file.write(b, "Triple", ids, spill.rows("Triple"), normalise)
    files = sorted(p.name for p in (a / vector_file.VECTOR_DIR).iterdir())
    assert files == sorted(f"Triple.{x}" for x in ("ids.npy", "emb.npy", "same.npy", "stored.npy", "json"))
    # the stored copies (rows that are not unit already) are np.save's bytes for them, in id order
    order = sorted(range(n), key=ids.__getitem__)
    differ = [emb[i] for i in order if not np.array_equal(normalise(emb[i:i + 1])[0], emb[i])]
    expected = io.BytesIO()
    np.save(expected, np.array(differ, dtype=np.float32).reshape(-1, 6), allow_pickle=False)
    assert 0 < len(differ) < n and (a / vector_file.VECTOR_DIR / "Triple.stored.npy").read_bytes() == expected.getvalue()
    for name in files:
        assert (a / vector_file.VECTOR_DIR / name).read_bytes() == (b / vector_file.VECTOR_DIR / name).read_bytes(), name


def test_the_rows_ids_are_kept_on_disk_and_read_back_in_order(tmp_path: Path) -> None:
    ids = ["tri:b", "ent:é \"quoted\"", "doc#c0", "tri:a"]
    with VectorSpill(tmp_path, 4) as spill:
        spill.append("Triple", np.zeros((4, 4), dtype=np.float32))
        spill.keep_ids("Triple", ids)
        assert spill.ids("Triple") == ids
        with pytest.raises(ValueError):  # the ids must match the spilled rows one for one
            spill.keep_ids("Triple", ids[:3])
        (spill.directory / "Triple.ids.json").write_text('["tri:b"]', "utf-8")
        with pytest.raises(OSError):
            spill.ids("Triple")
        assert spill.ids("Entity") is None  # none kept (or the folder removed by another build)
