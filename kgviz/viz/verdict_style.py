"""How a claim verdict looks in HTML (its colour and words) and the one escaping helper, shared by
the case file (kgviz.viz.case_file) and the claim → evidence view (kgviz.viz.claim_evidence)."""
from __future__ import annotations

import html

from kgviz.safe_text import safe_text

# a supported claim is pale blue, not green: supported by its context is not right (kgviz.verify.outcome
# keeps green for an answer both right and grounded)
LABEL_COLOURS = {"supported": "#d3e5f5", "contradicted": "#ffcdd2", "not_found": "#e0e0e0", "unparsed": "#fff3cd"}
LABEL_TEXT = {"supported": "supported", "contradicted": "contradicted", "not_found": "not found in context",
              "unparsed": "judge reply unparsed"}


def esc(value: object) -> str:
    """Document, model or user text made safe for HTML (kgviz.safe_text, then html.escape)."""
    return html.escape(safe_text(value), quote=True)
