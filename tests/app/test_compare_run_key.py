"""The Compare page's run key: a non-default answer budget is its own element of the key, never an
entry among the method's params; with the default budget the key is the Trace page's."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kgviz.answer import DEFAULT_BUDGET_TOKENS
from kgviz.ui import compare as ucmp
from kgviz.ui import trace as tui


def _ctx(tmp_path: Path) -> Any:
    return SimpleNamespace(db_dir=tmp_path, embedder_spec="hashing", llm_spec="offline")


def test_budget_is_its_own_key_element_not_a_param(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    default = ucmp.run_key(ctx, "text-rag", " Q? ")
    assert default == tui.run_key(ctx, "text-rag", "Q?", ucmp.trace_form_defaults("text-rag"), "")
    assert ucmp.run_key(ctx, "text-rag", "Q?", DEFAULT_BUDGET_TOKENS) == default
    small = json.loads(ucmp.run_key(ctx, "text-rag", "Q?", 1000))
    assert small[:-1] == json.loads(default) and small[-1] == {"answer_budget_tokens": 1000}
    params = small[-2]
    assert set(params) == set(ucmp.trace_form_defaults("text-rag"))  # no sentinel among the params
