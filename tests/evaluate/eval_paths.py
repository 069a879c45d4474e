"""Paths shared by the evaluation tests (a uniquely named module: several test folders have a
conftest.py, so `from conftest import ...` would be ambiguous)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_QUESTIONS = ROOT / "sample_data" / "questions.jsonl"
