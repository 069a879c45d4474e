"""The calibration prompt (kgviz.providers.speed.calibrate): a short, fixed request whose only
purpose is to time a local model's prompt processing and generation.

Each call starts with its own request id (the calibration run's time and the call's number) so a
server's prompt cache (llama.cpp reuses the longest common prefix) cannot skip the prompt of a
later call, nor of the same call in a later calibration; the passage gives
the prompt a realistic length (~150 tokens). The model is asked to retell the passage at length:
prose has no repeated lines (the loop guard never cuts it) and a small model keeps writing it
(issue 23: asked to count to 100, one per line, qwen2.5-coder-0.5b wrote at most 21 tokens; an
earlier calibration timed a 2-token reply), so a model that follows the prompt is stopped by
``CALIBRATION_MAX_TOKENS``; a call that wrote fewer than ``kgviz.providers.speed.MIN_GEN_TOKENS``
does not count for the generation rate.
"""
from __future__ import annotations

CALIBRATION_PROMPT_NAME = "CALIBRATION"
CALIBRATION_MAX_TOKENS = 96  # ours: enough tokens to time generation (>= 64), few enough for a CPU model (~14 s at 7 tokens/s)

CALIBRATION_PASSAGE = (
    "The harbour town of Kellhaven grew around a stone bridge built in 1821 by the engineer Edda "
    "Lunn, who designed more than forty bridges along the northern coast. Her workshop trained "
    "apprentices from Ventholm and Dorrow, and the guild she founded kept records of every span, "
    "its length, its builder and the year it opened. Those records, kept in the town library, "
    "later helped historians date the older quays, the lighthouse and the customs house, which "
    "all followed the bridge within twenty years."
)

CALIBRATION_TEMPLATE = (
    "Request {index}. Read the passage, then retell it in your own words in about 300 words, "
    "adding what a visitor to the town would see today.\n\nPassage: {passage}"
)


def render_calibration(request: int | str) -> str:
    return CALIBRATION_TEMPLATE.format(index=request, passage=CALIBRATION_PASSAGE)
