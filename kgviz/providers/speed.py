"""How fast a local model is, measured, never assumed (issue 15, bullet 5).

A CPU model's time is tokens over rates: prompt processing and generation run at very different
speeds (qwen2.5-coder 1.5B here: ~40 prompt tokens/s, ~7 generated tokens/s), so one call takes
``input_tokens / prompt_tps + output_tokens / gen_tps`` seconds. Extra workers help only as much
as the server really runs calls side by side: two llama-server slots on one thread gave 0.98×,
so parallelism is a measured figure too, never the worker count.

Where the figures come from, in this order of trust (all are measured calls to that model):

* calibration calls the user asked for (``kgviz build --estimate --calibrate``, the Build page's
  button), kept in ``<cache dir>/local_speed.jsonl``: one call alone, then (with 2+ workers) two
  at once, so parallelism is measured as well;
* the workspace's earlier calls to that model: every LLM cache row holds input/output tokens, the
  call's seconds and when it ended; streamed calls (``chat_stream``) also hold the time to the
  first token, which splits prompt from generation time.

How much to trust them (issue 23: two calibrations minutes apart gave 178 s and 93 s for a build
that took 156 s): every call long enough to time generation (``MIN_GEN_TOKENS`` tokens) whose
prompt and generation time are known gives rates of its own; the spread of those per-call rates
is kept (``LocalSpeed.prompt_range`` / ``gen_range``), and the estimate carries the time range it
implies. Calibration times calls alone until two agree within ``AGREE`` (20 %), at most
``MAX_ROUNDS``, and says how much they varied when no two did.

Rates come from calls that ran alone (their intervals overlap no other call); when every call
overlapped, from all of them (then per-call rates are already slowed by the sharing, and the
measured parallelism undoes that, so the aggregate throughput is still right for that worker
count). Without a prompt/generation split, the two rates are fitted by least squares over calls
of different shapes; with too few or degenerate calls the speed is unknown, and says so.
"""
from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from kgviz.errors import ProviderError
from kgviz.prompts.calibration import CALIBRATION_MAX_TOKENS, render_calibration
from kgviz.providers.cache import CACHE_FILE
from kgviz.types import Message

SPEED_FILE = "local_speed.jsonl"
MIN_CALLS_FOR_FIT = 2  # two unknown rates need two calls of different shapes
MIN_GEN_TOKENS = 64  # ours: a call that wrote fewer tokens times its first-token latency, not generation
AGREE = 0.20  # ours: two calls whose prompt and generation rates are within 20 % agree
MAX_ROUNDS = 4  # ours: calibration calls made alone, at most, while none agree


@dataclass(frozen=True)
class TimedCall:
    """One measured call: tokens, its seconds, when it ended (epoch seconds)."""

    input_tokens: int
    output_tokens: int
    seconds: float
    end: float
    prompt_s: float | None = None  # time to the first token (streamed calls only)
    source: str = "history"  # "history" (LLM cache) | "calibration"

    @property
    def start(self) -> float:
        return self.end - self.seconds


@dataclass(frozen=True)
class LocalSpeed:
    """Measured speed of one model on one server. ``parallelism`` is the measured speed-up of
    calls run side by side (None: never measured)."""

    prompt_tps: float
    gen_tps: float
    n_calls: int
    basis: str  # "alone" | "overlapping" (every call shared the server with another)
    sources: tuple[str, ...]  # which of "calibration", "history" the calls came from
    parallelism: float | None = None
    parallel_calls: int = 0  # calls in the overlapping groups parallelism was measured on
    # (lowest, highest) per-call rates of the ``ranged_calls`` calls that each time both rates
    # (a split and MIN_GEN_TOKENS output); None with fewer than two such calls
    prompt_range: tuple[float, float] | None = None
    gen_range: tuple[float, float] | None = None
    ranged_calls: int = 0
    agreed: bool = False  # two of those calls agree within AGREE

    def call_seconds(self, input_tokens: float, output_tokens: float) -> float:
        return input_tokens / self.prompt_tps + output_tokens / self.gen_tps

    def call_seconds_range(self, input_tokens: float, output_tokens: float) -> tuple[float, float] | None:
        """The fastest and slowest time the per-call rates allow; None when not measured."""
        if self.prompt_range is None or self.gen_range is None:
            return None
        fast = input_tokens / self.prompt_range[1] + output_tokens / self.gen_range[1]
        slow = input_tokens / self.prompt_range[0] + output_tokens / self.gen_range[0]
        return fast, slow

    @property
    def spread(self) -> float | None:
        """How many times faster the fastest call was than the slowest (the larger of both rates)."""
        if self.prompt_range is None or self.gen_range is None:
            return None
        return max(self.prompt_range[1] / self.prompt_range[0], self.gen_range[1] / self.gen_range[0])

    def describe_spread(self) -> str:
        if self.spread is None:
            return (f"fewer than two calls of {MIN_GEN_TOKENS}+ tokens timed both rates, so how much the "
                    "time varies is unknown")
        if self.agreed:
            return (f"two of {self.ranged_calls} timed calls agreed within {AGREE:.0%} "
                    f"(all {self.ranged_calls} within {self.spread:.2f}×)")
        return (f"no two of {self.ranged_calls} timed calls agreed within {AGREE:.0%}: their rates vary "
                f"{self.spread:.1f}× (a busy machine), so the time is a range")

    def effective_parallelism(self, workers: int) -> float:
        """The speed-up to expect with ``workers``: the measured one, capped by the workers; 1
        when not measured (calls queue on the server until shown otherwise)."""
        if self.parallelism is None or workers <= 1:
            return 1.0
        return min(float(workers), self.parallelism)

    def describe(self, workers: int) -> str:
        where = " and ".join(s if s == "calibration" else "earlier calls in this workspace" for s in self.sources)
        text = (f"measured on {self.n_calls} call(s) ({where}): prompt {self.prompt_tps:.1f} tokens/s, "
                f"generation {self.gen_tps:.1f} tokens/s; {self.describe_spread()}")
        if self.basis == "overlapping":
            # rates of calls that shared the server: right for as many workers as then, an upper
            # bound for fewer (on a server that did them one at a time, a call alone is faster)
            at_once = self.parallelism or 1.0
            text += f" (every call shared the server, ~{at_once:.1f} at a time)"
            if workers < at_once - 0.05:
                return text + (f"; with {workers} worker(s) the time may be up to {at_once / workers:.1f}× too long: "
                               "calibrate to time a call alone")
            return text + f"; {workers} worker(s)"
        if workers <= 1:
            return text + "; 1 worker"
        if self.parallelism is None:
            return text + f"; {workers} workers counted as 1 (parallel speed-up not measured: calibrate to measure it)"
        return (text + f"; parallel speed-up {self.parallelism:.2f}× measured on {self.parallel_calls} overlapping "
                f"calls, so {workers} workers count as {self.effective_parallelism(workers):.2f}")


def _usable(c: TimedCall) -> bool:
    return c.seconds > 0 and (c.input_tokens > 0 or c.output_tokens > 0)


def _groups(calls: Sequence[TimedCall]) -> list[list[TimedCall]]:
    """Calls whose intervals overlap (transitively), in start order."""
    out: list[list[TimedCall]] = []
    end = float("-inf")
    for c in sorted(calls, key=lambda c: (c.start, c.end)):
        if out and c.start < end:
            out[-1].append(c)
            end = max(end, c.end)
        else:
            out.append([c])
            end = c.end
    return out


def _rates(calls: Sequence[TimedCall]) -> tuple[float, float] | None:
    split = [c for c in calls if c.prompt_s is not None and 0 < c.prompt_s < c.seconds]
    long_enough = [c for c in split if c.output_tokens >= MIN_GEN_TOKENS]
    if long_enough:  # a 2-token reply times the first-token latency, not generation (issue 23)
        split = long_enough
    if split:
        p_tok, p_s = sum(c.input_tokens for c in split), sum(c.prompt_s or 0.0 for c in split)
        g_tok, g_s = sum(c.output_tokens for c in split), sum(c.seconds - (c.prompt_s or 0.0) for c in split)
        if p_tok > 0 and g_tok > 0 and p_s > 0 and g_s > 0:
            return p_tok / p_s, g_tok / g_s
    if len(calls) < MIN_CALLS_FOR_FIT:
        return None
    # least squares for seconds = a·input + b·output (a, b = seconds per token), no intercept
    sxx = sum(c.input_tokens**2 for c in calls)
    syy = sum(c.output_tokens**2 for c in calls)
    sxy = sum(c.input_tokens * c.output_tokens for c in calls)
    sxt = sum(c.input_tokens * c.seconds for c in calls)
    syt = sum(c.output_tokens * c.seconds for c in calls)
    det = sxx * syy - sxy * sxy
    if det <= 1e-9 * max(sxx * syy, 1.0):  # calls of one shape: the two rates cannot be told apart
        return None
    a, b = (sxt * syy - syt * sxy) / det, (syt * sxx - sxt * sxy) / det
    if a <= 0 or b <= 0:  # noise larger than the signal: no honest rate
        return None
    return 1.0 / a, 1.0 / b


def call_rates(c: TimedCall) -> tuple[float, float] | None:
    """(prompt, generation) tokens/s of one call, when it times both: its time to the first token
    is known and it wrote at least MIN_GEN_TOKENS tokens."""
    if c.prompt_s is None or not 0 < c.prompt_s < c.seconds or c.input_tokens <= 0 or c.output_tokens < MIN_GEN_TOKENS:
        return None
    return c.input_tokens / c.prompt_s, c.output_tokens / (c.seconds - c.prompt_s)


def _agree(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(max(x, y) <= (1 + AGREE) * min(x, y) for x, y in zip(a, b))


def agreeing(calls: Sequence[TimedCall]) -> bool:
    """Two of ``calls`` time both rates and agree within AGREE."""
    rates = [r for r in map(call_rates, calls) if r is not None]
    return any(_agree(a, b) for i, a in enumerate(rates) for b in rates[i + 1:])


def _spread(calls: Sequence[TimedCall]) -> dict[str, Any]:
    rates = [r for r in map(call_rates, calls) if r is not None]
    if len(rates) < 2:
        return {}
    p, g = [r[0] for r in rates], [r[1] for r in rates]
    return {"prompt_range": (min(p), max(p)), "gen_range": (min(g), max(g)), "ranged_calls": len(rates),
            "agreed": agreeing(calls)}


def measure(calls: Iterable[TimedCall]) -> LocalSpeed | None:
    """The speed shown by ``calls``, or None when they do not determine it."""
    usable = [c for c in calls if _usable(c)]
    groups = _groups(usable)
    alone = [g[0] for g in groups if len(g) == 1]
    basis, chosen = ("alone", alone) if alone else ("overlapping", usable)
    rates = _rates(chosen)
    if rates is None:
        return None
    speed = LocalSpeed(rates[0], rates[1], len(chosen), basis,
                       tuple(sorted({c.source for c in chosen})), **_spread(chosen))
    shared = [g for g in groups if len(g) > 1]
    if not shared:
        return speed
    busy = sum(speed.call_seconds(c.input_tokens, c.output_tokens) for g in shared for c in g)
    wall = sum(max(c.end for c in g) - min(c.start for c in g) for g in shared)
    if wall <= 0:
        return speed
    return replace(speed, parallelism=busy / wall, parallel_calls=sum(len(g) for g in shared))


# --- where measured calls are kept -----------------------------------------------------------
def history_calls(cache_dir: Path, provider: str, model: str) -> list[TimedCall]:
    """Every call to ``provider:model`` in the LLM cache (accepted or not: each one was a real,
    timed request). Read-only; the cache's own module owns the file."""
    path = Path(cache_dir) / CACHE_FILE
    if not path.is_file():
        return []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
        try:
            rows = conn.execute(
                "SELECT input_tokens, output_tokens, latency_s, created, raw FROM completions "
                "WHERE provider = ? AND model = ? ORDER BY created, key", (provider, model)).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []  # an unreadable cache only means nothing was measured there
    out = []
    for tin, tout, seconds, created, raw in rows:
        extra = _json(raw)
        if extra.get("usage_missing"):
            continue  # a server that sent no usage: the tokens are unknown, the rates would be 0
        prompt_s = extra.get("prompt_s")
        out.append(TimedCall(int(tin), int(tout), float(seconds), float(created),
                             float(prompt_s) if isinstance(prompt_s, (int, float)) else None))
    return out


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def calibration_calls(cache_dir: Path, provider: str, model: str, base_url: str | None) -> list[TimedCall]:
    path = Path(cache_dir) / SPEED_FILE
    if not path.is_file():
        return []
    rows = [r for r in map(_json, path.read_text(encoding="utf-8").splitlines())
            if (r.get("provider"), r.get("model"), r.get("base_url")) == (provider, model, base_url)]
    latest = max((r.get("run", 0) for r in rows), default=0)  # the server may have been restarted since
    out = []
    for row in rows:
        if row.get("run", 0) != latest:
            continue
        try:
            out.append(TimedCall(**{k: row[k] for k in ("input_tokens", "output_tokens", "seconds", "end", "prompt_s")},
                                 source="calibration"))
        except (KeyError, TypeError):
            continue  # a hand-edited or truncated line
    return out


def load_speed(cache_dir: Path | None, provider: str, model: str, base_url: str | None) -> LocalSpeed | None:
    """The measured speed of this model: calibration calls, else the workspace's earlier calls."""
    if cache_dir is None:
        return None
    calibrated = measure(calibration_calls(cache_dir, provider, model, base_url))
    if calibrated is not None:
        return calibrated
    return measure(history_calls(cache_dir, provider, model))


# --- calibration -----------------------------------------------------------------------------
def calibrate(llm: Any, cache_dir: Path, *, workers: int,
              more: Callable[[float], list[TimedCall]] | None = None) -> LocalSpeed | None:
    """Time calls alone until two agree within AGREE (at most MAX_ROUNDS), then the calls of
    ``more`` (given the run's id: the extraction's own calls on the corpus, alone too) and, with
    2+ workers, two at once; append them to ``SPEED_FILE`` (the latest run counts) and return the
    speed they show. ``llm`` must be uncached (a cached reply measures the disk)."""
    from concurrent.futures import ThreadPoolExecutor

    run = time.time()
    calls: list[TimedCall] = []
    for i in range(MAX_ROUNDS):
        calls.append(_timed(llm, f"{run:.0f}-{i}"))
        if agreeing(calls):
            break
    if more is not None:
        calls += more(run)
    if workers >= 2:
        with ThreadPoolExecutor(2) as pool:
            calls += list(pool.map(lambda i: _timed(llm, f"{run:.0f}-{i}"), (MAX_ROUNDS, MAX_ROUNDS + 1)))
    path = Path(cache_dir) / SPEED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for c in calls:
            row = {"run": run, "provider": llm.provider, "model": llm.model, "base_url": getattr(llm, "base_url", None),
                   **{k: v for k, v in asdict(c).items() if k != "source"}}
            f.write(json.dumps(row) + "\n")
    longest = max(c.output_tokens for c in calls)
    if longest < MIN_GEN_TOKENS:
        raise ProviderError(
            f"the calibration calls to {llm.provider}:{llm.model} wrote at most {longest} tokens; timing "
            f"generation needs {MIN_GEN_TOKENS} or more",
            hint="the model is asked to retell a passage at length: check that it follows the prompt, or "
                 "calibrate with another model")
    return measure(calibration_calls(cache_dir, llm.provider, llm.model, getattr(llm, "base_url", None)))


def _timed(llm: Any, request: str) -> TimedCall:
    c = llm.complete([Message("user", render_calibration(request))], max_tokens=CALIBRATION_MAX_TOKENS)
    return TimedCall(processed_prompt_tokens(c), c.usage.output_tokens, c.latency_s, time.time(),
                     _number(c.raw.get("prompt_s")), source="calibration")


def processed_prompt_tokens(c: Any) -> int:
    """The prompt tokens the server processed for completion ``c``: llama.cpp's ``timings.prompt_n``
    when it says (a prompt it kept from an earlier call is not processed again: a second
    calibration with the same request took 0.9 s for "147 tokens", 1 processed), else all."""
    timings = c.raw.get("timings")
    n = timings.get("prompt_n") if isinstance(timings, dict) else None
    return n if isinstance(n, int) and 0 < n <= c.usage.input_tokens else c.usage.input_tokens


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None
