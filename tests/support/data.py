"""Where the public evaluation data lives (``../shared/data`` beside the checkout, or $KGVIZ_DATA).

Tests that read it skip cleanly when it is absent (a user's machine, a clone elsewhere); point
KGVIZ_DATA at the folder to run them from a clone that does not sit beside ``shared/``.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("KGVIZ_DATA") or ROOT.parent / "shared" / "data")
