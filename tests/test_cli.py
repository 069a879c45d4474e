"""The `kgviz` command line on the sample corpus and on bad input (offline, temp databases)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgviz.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "corpus"


@pytest.fixture(scope="module")
def built_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("cli") / "db"
    assert main(["build", str(SAMPLE), "--db", str(db), "--json"]) == 0
    return db


def test_help_works_as_a_console_script():
    out = subprocess.run([sys.executable, "-m", "kgviz.cli", "--help"], capture_output=True, text=True, check=True)
    for command in ("build", "import-kg", "ask", "methods"):
        assert command in out.stdout


def test_build_json_reports_a_non_trivial_graph_and_a_rerun_adds_nothing(env, capsys):
    db = env / "db"
    assert main(["build", str(SAMPLE), "--db", str(db), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    counts = first["counts"]
    assert first["mode"] == "offline"
    assert counts["Document"] == 15 and counts["Entity"] > 40 and counts["Triple"] > 60
    assert counts["SIMILAR_DOC"] > 0
    # at least one hypernode: a triple whose subject or object is another triple
    assert first["new_triples"] == counts["Triple"]
    assert main(["build", str(SAMPLE), "--db", str(db), "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["counts"] == counts
    assert second["new_documents"] == 0 and second["skipped_documents"] == 15


def test_graph_has_a_hypernode(built_db):
    from kgviz.graph.store import GraphStore

    with GraphStore.open(built_db) as store:
        rows = store.query("MATCH (t:Triple)-[:SUBJ|OBJ]->(inner:Triple) RETURN count(*) AS n")
    assert rows[0]["n"] >= 1


def test_ask_json_runs_every_method_offline(built_db, env, capsys):
    question = "Who designed the bridge that Mira Tesk said was unsafe?"
    assert main(["ask", question, "--db", str(built_db), "--method", "all", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    names = {r["method"] for r in runs}
    assert {"no-retrieval", "text-rag", "kg-rag", "kg-retriever"} <= names
    for r in runs:
        assert r["mode"] == "offline"
        assert isinstance(r["trace"], list) and r["trace"], r["method"]
        assert "usage" in r
    text_rag = next(r for r in runs if r["method"] == "text-rag")
    assert "Edda Lunn" in text_rag["answer"] or "Edda Lunn" in json.dumps(text_rag["context"])


@pytest.mark.parametrize(
    "content, reason",
    [(b"", "empty"), (b"\x00\x01\x02binary\x00" * 50, "binary"), (b"\xff\xfe\xfa not utf8 \xc3\x28", "UTF-8")],
)
def test_bad_input_is_a_clear_error_and_writes_nothing(env, capsys, content, reason):
    bad = env / "bad.txt"
    bad.write_bytes(content)
    db = env / "db"
    assert main(["build", str(bad), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "bad.txt" in err and reason.lower() in err.lower()


def test_unknown_method_and_bad_spec_exit_2(built_db, env, capsys):
    assert main(["ask", "q?", "--db", str(built_db), "--method", "nope"]) == 2
    assert "unknown method" in capsys.readouterr().err
    assert main(["ask", "q?", "--db", str(built_db), "--llm", "gemini:x"]) == 2
    assert "error:" in capsys.readouterr().err


def test_ask_method_repeated_runs_every_named_method(built_db, env, capsys):
    q = "In which town was the founder of the Ossel Marine Institute born?"
    args = ["ask", q, "--db", str(built_db), "--json", "--method", "no-retrieval", "--method", "text-rag,no-retrieval"]
    assert main(args) == 0
    assert [r["method"] for r in json.loads(capsys.readouterr().out)] == ["no-retrieval", "text-rag"]
    assert main(["ask", q, "--db", str(built_db), "--method", "text-rag", "--method", "nope"]) == 2
    assert "unknown method" in capsys.readouterr().err


def test_missing_key_names_the_variable(built_db, env, capsys):
    assert main(["ask", "q?", "--db", str(built_db), "--llm", "anthropic:claude-haiku-4-5"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_embedder_mismatch_is_a_clear_error(built_db, env, capsys):
    assert main(["ask", "q?", "--db", str(built_db), "--embedder", "hashing:64"]) == 2
    assert "embedder" in capsys.readouterr().err.lower()


@pytest.mark.slow
def test_locked_database_names_the_path(built_db, env, capsys):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from kgviz.graph.store import GraphStore; s = GraphStore.open(sys.argv[1]); "
         "print('open', flush=True); time.sleep(30)", str(built_db)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        # this process has the db open from the fixture; a fresh path in *another* process is the
        # realistic case, so ask from a subprocess
        out = subprocess.run([sys.executable, "-m", "kgviz.cli", "ask", "q?", "--db", str(built_db)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2
        assert "lock" in out.stderr.lower() and str(built_db.name) in out.stderr
    finally:
        holder.kill()
        holder.wait()


def test_ask_exit_status_says_how_many_runs_failed(built_db, env, capsys, tmp_path, monkeypatch):
    """0 every method answered (above), 3 some failed, 2 all failed; the runs are printed either way."""
    import shutil

    from tests.support.fake_server import FakeServer, Reply

    from kgviz.graph.store import GraphStore

    db = tmp_path / "no-fts"
    shutil.copytree(built_db, db)
    with GraphStore.open(db) as store:  # text-rag then fails: its index is gone
        store.execute("CALL DROP_FTS_INDEX('Chunk', 'chunk_fts')")
    question = "Who designed the bridge that Mira Tesk said was unsafe?"
    assert main(["ask", question, "--db", str(db), "--method", "text-rag,kg-rag"]) == 3
    err = capsys.readouterr().err
    assert "1 of 2 method(s) failed: text-rag" in err
    assert main(["ask", question, "--db", str(db), "--method", "text-rag", "--json"]) == 2
    runs = json.loads(capsys.readouterr().out)
    assert [r["method"] for r in runs] == ["text-rag"] and "No full-text index" in runs[0]["error"]

    monkeypatch.setenv("KGVIZ_MAX_RETRIES", "0")
    with FakeServer() as srv:
        srv.script(Reply(500, {"error": {"message": "internal error"}}))
        code = main(["ask", question, "--db", str(built_db), "--method", "no-retrieval,kg-rag", "--json",
                     "--llm", f"openai-compatible:m@{srv.url}/v1"])
    runs = json.loads(capsys.readouterr().out)
    assert code == 2 and all(r["error"] for r in runs) and len(runs) == 2


def test_ask_preset_applies_where_a_method_has_it(built_db, env, capsys):
    q = "In which town was the founder of the Ossel Marine Institute born?"
    assert main(["ask", q, "--db", str(built_db), "--method", "kg-retriever,kg-rag,text-rag",
                 "--preset", "paper", "--json"]) == 0
    captured = capsys.readouterr()
    runs = {r["method"]: r for r in json.loads(captured.out)}
    assert runs["kg-retriever"]["preset"] == "paper" and runs["kg-retriever"]["params"]["lam_mode"] == "absolute"
    assert runs["kg-rag"]["preset"] == "reconstruction"  # its old name 'paper' is read as the new one
    assert runs["text-rag"]["preset"] == "" and "no preset 'paper' for text-rag" in captured.err
    assert all(s["ours"] for s in runs["kg-rag"]["trace"] if s["kind"] != "answer")
    assert not any(s["ours"] for s in runs["kg-retriever"]["trace"])
    # one method's preset overrides the shared one; an unknown name is a clear error before anything runs
    assert main(["ask", q, "--db", str(built_db), "--method", "kg-retriever", "--preset", "paper",
                 "--preset", "kg-retriever=code", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["preset"] == "code"
    assert main(["ask", q, "--db", str(built_db), "--method", "text-rag", "--preset", "paper"]) == 2
    assert "none of text-rag has a preset by that name" in capsys.readouterr().err


def test_ask_warns_when_the_last_build_did_not_finish(env, capsys):
    from kgviz.graph.store import GraphStore
    from kgviz.index.steps import BUILD_KEY

    db = env / "db"
    assert main(["build", str(SAMPLE), "--db", str(db), "--json"]) == 0
    capsys.readouterr()
    assert main(["ask", "Who founded Ossel?", "--db", str(db), "--method", "text-rag"]) == 0
    assert "last build" not in capsys.readouterr().err
    with GraphStore.open(db) as store:  # what a build stopped in its index stage leaves
        store.set_meta(BUILD_KEY, "index")
    assert main(["ask", "Who founded Ossel?", "--db", str(db), "--method", "text-rag"]) == 0
    assert "warning: The last build of this workspace stopped in its index stage" in capsys.readouterr().err
    assert main(["build", str(SAMPLE), "--db", str(db), "--json"]) == 0
    assert "finished an earlier build of this workspace that had stopped in its index stage" in capsys.readouterr().out
    assert main(["ask", "Who founded Ossel?", "--db", str(db), "--method", "text-rag"]) == 0
    assert "last build" not in capsys.readouterr().err
