"""Batch evaluation: QA files, the resumable runner, statistics (bootstrap CIs, paired tests),
summaries and the benchmark suite."""
from kgviz.evaluate.batch import EvalOutcome, default_out_dir, run_evaluation
from kgviz.evaluate.qa import QAItem, load_questions, parse_question_bytes, parse_questions
from kgviz.evaluate.report import EvalSummary, format_table, summarise
from kgviz.evaluate.runner import EvalProgress, EvalRecord, EvalResult, evaluate, read_results

__all__ = [
    "EvalOutcome", "EvalProgress", "EvalRecord", "EvalResult", "EvalSummary", "QAItem", "default_out_dir",
    "evaluate", "format_table", "load_questions", "parse_question_bytes", "parse_questions", "read_results",
    "run_evaluation", "summarise",
]
