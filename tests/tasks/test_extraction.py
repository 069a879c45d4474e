"""Task "extract_triples" through the Reasoner: registration, prompt, LLM and offline paths."""
from __future__ import annotations


from tests.support.index_fakes import ScriptedLLM
from kgviz.facts.triples import ExtractionOutput
from kgviz.prompts.extraction import EXTRACT_TRIPLES, EXTRACT_TRIPLES_SYSTEM
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.providers.usage import UsageLedger
from kgviz.reasoning import Reasoner, get_task

TEXT = "Kell Arden founded Tesk Works in 1921. {braces} stay as they are."


def test_task_is_registered_with_its_prompt() -> None:
    task = get_task("extract_triples")
    assert task.prompt_name == "EXTRACT_TRIPLES" and task.system == EXTRACT_TRIPLES_SYSTEM
    prompt = task.render({"text": TEXT})
    assert prompt.startswith(EXTRACT_TRIPLES.split("\n", 1)[0])
    assert prompt.count("Text: ") == 7 and prompt.rstrip().endswith(f"Text: {TEXT}\nTriples:")


def test_llm_path_parses_and_accounts_usage() -> None:
    ledger = UsageLedger()
    llm = ScriptedLLM(lambda text: "1. ((Kell Arden; founded; Tesk Works); in year; 1921)\n(garbage")
    res = Reasoner(llm, HashingEmbedder(32), ledger=ledger).run("extract_triples", text=TEXT)
    out = res.value
    assert isinstance(out, ExtractionOutput) and out.status == "partial" and out.n_malformed == 1
    assert [t.render() for t in out.triples] == ["((Kell Arden; founded; Tesk Works); in year; 1921)"]
    assert res.call.mode == "fake:scripted-1" and res.call.raw_output.endswith("(garbage")
    assert ledger.by_step()["extract_triples"].input_tokens > 0


def test_offline_path_is_labelled_and_real() -> None:
    res = Reasoner(OfflineLLM(), HashingEmbedder(32)).run("extract_triples", text=TEXT, max_triples=5)
    assert res.call.mode == "offline" and res.call.heuristic.startswith("pattern-extractor")
    assert "(Kell Arden; founded; Tesk Works [organisation])" in [t.render() for t in res.value.triples]
