"""The calibration prompt (kgviz.providers.speed.calibrate): a short, fixed request whose only
purpose is to time a local model's prompt processing and generation.

Each call starts with its own request number so a server's prompt cache (llama.cpp reuses the
longest common prefix) cannot skip the prompt of the second and third call; the passage gives
the prompt a realistic length (~150 tokens); counting asks for many short, distinct lines, so
the model writes up to ``CALIBRATION_MAX_TOKENS`` tokens without tripping the loop guard (a line
holding no letter is never a counting loop: ``kgviz.facts.loops``). Issue 23: with 48 tokens (and
a model that stopped after 2) one call's generation time was noise; 100 numbers are ~200 tokens,
so a model that follows the prompt is stopped by max_tokens, and a call that wrote fewer than
``kgviz.providers.speed.MIN_GEN_TOKENS`` does not count for the generation rate.
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
    "Request {index}. Read the passage, then write the numbers from 1 to 100, one per line, "
    "and nothing else.\n\nPassage: {passage}"
)


def render_calibration(index: int) -> str:
    return CALIBRATION_TEMPLATE.format(index=index, passage=CALIBRATION_PASSAGE)
