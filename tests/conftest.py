"""Suite-wide pins.

The default embedder spec is ``auto``, which loads a neural model when one happens to be on the
machine (KGVIZ_EMBEDDER_DIR, the fastembed cache). Tests must not change behaviour with that, so
the whole session (and every subprocess it starts: the CLI, the Streamlit server of the browser
tests) runs with KGVIZ_EMBEDDER=hashing and without the variables ``auto`` reads. A test that is
about ``auto`` or a model asks for it explicitly (monkeypatch.setenv, or AutoEmbedderParams).
Set at import, not in a fixture: session-scoped fixtures (the e2e server) start before any
function-scoped one would run.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

PINNED_EMBEDDER = "hashing"
os.environ["KGVIZ_EMBEDDER"] = PINNED_EMBEDDER
for _var in ("KGVIZ_EMBEDDER_DIR", "KGVIZ_EMBEDDER_MODEL"):
    os.environ.pop(_var, None)
# A test that unsets KGVIZ_EMBEDDER gets ``auto``: point fastembed's cache at a folder that does not
# exist, so ``auto`` finds no model there either (and explicit fastembed specs download nothing
# into a real cache).
_SCRATCH = tempfile.mkdtemp(prefix="kgviz-tests-")  # fastembed may create the cache folder: removed at exit
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
os.environ["FASTEMBED_CACHE_PATH"] = str(Path(_SCRATCH) / "no-fastembed-cache")
