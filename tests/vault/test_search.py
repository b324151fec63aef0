"""Search by meaning: the real all-MiniLM-L6-v2 ONNX model, vectors in the index, fusion.

The model is the one a test-only package ships (``embedding_model.py``), run
through the same code path as a user's downloaded model. The OpenAI-compatible
backend talks to a small HTTP server on 127.0.0.1 speaking ``/v1/embeddings``,
which computes its vectors with that same real model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters

from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.vault import EmbeddingSettings, Vault
from agent_mem_vault.vault.index.embeddings import OnnxEmbedder
from agent_mem_vault.vault.index.vectors import rrf_fuse
from mcp import Client

from .conftest import NS, opened_vault
from .embedding_model import model_files, model_folder

BIN = Path(sys.executable).parent / "agent-mem-vault"

# The example: no word of the question is in the memory that answers it.
QUESTION = "why are the backfill batches small"
ANSWER_TITLE = "Chunked migration"
ANSWER_TEXT = "Lock time must stay under 50 ms, so we chunk the migration by 1000 rows."
OTHERS = [
    ("Session store", "We picked Postgres for the session store because it has transactions."),
    ("Release day", "Releases go out on Tuesdays after the staging smoke test passes."),
    ("Logo colours", "The logo uses the teal from the design kit, never the old orange."),
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return model_folder(tmp_path_factory.mktemp("model"))


@pytest.fixture
def local(model_dir: Path) -> EmbeddingSettings:
    return EmbeddingSettings(backend="local", model_dir=model_dir)


@pytest.fixture
def hybrid_vault(vault_path: Path, local: EmbeddingSettings) -> Iterator[Vault]:
    yield from opened_vault(vault_path, embeddings=local)


def fill(v: Vault, namespace: str = NS) -> str:
    """Four memories; returns the id of the one that answers ``QUESTION``."""
    for title, content in OTHERS:
        v.save_memory(namespace=namespace, title=title, content=content)
    return v.save_memory(namespace=namespace, title=ANSWER_TITLE, content=ANSWER_TEXT).id


def searched_by_full_text(path: Path, settings: EmbeddingSettings) -> tuple[Vault, str]:
    """A vault at ``path`` with ``settings``, filled, whose search for "teal logo" must
    fall back to full text: the vault and the reason the search gives."""
    v = Vault(path, durable=False, embeddings=settings)
    v.init()
    fill(v)
    found = v.search_memory(query="teal logo")
    assert found.mode == "fts" and found[0].memory.title == "Logo colours"
    return v, found.reason or ""


def note_path(v: Vault, memory_id: str) -> Path:
    return next(v.path.rglob(f"{memory_id}.md"))


def cli_env(vault: Path, **extra: str) -> dict[str, str]:
    # A home of its own: `doctor` also judges the agents' settings under HOME,
    # and the developer's own must not decide this test.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEM_VAULT")}
    home = vault.parent / "home"
    home.mkdir(parents=True, exist_ok=True)
    isolated = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    for name in ("CODEX_HOME", "GEMINI_CLI_HOME", "CLAUDE_CONFIG_DIR"):
        env.pop(name, None)
    return {**env, **isolated, "AGENT_MEM_VAULT": str(vault), **extra}


# -- the model --------------------------------------------------------------------------


def test_the_shipped_onnx_model_gives_unit_vectors_that_put_paraphrases_close() -> None:
    model, tokenizer = model_files()
    vectors = OnnxEmbedder(model, tokenizer, model="test").embed(
        [QUESTION, ANSWER_TEXT, OTHERS[2][1]]
    )
    assert vectors.shape == (3, 384)
    assert abs(float((vectors[0] ** 2).sum()) - 1.0) < 1e-4
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert related > unrelated + 0.1


# -- hybrid search ----------------------------------------------------------------------------


def test_hybrid_search_finds_a_memory_that_shares_no_word_with_the_question(
    hybrid_vault: Vault,
) -> None:
    answer = fill(hybrid_vault)
    fts = hybrid_vault.search_memory(query=QUESTION, namespace=NS, mode="fts")
    assert fts.mode == "fts"
    assert answer not in [h.memory.id for h in fts[:1]]
    found = hybrid_vault.search_memory(query=QUESTION, namespace=NS)
    assert found.mode == "hybrid" and found.reason is None
    assert found[0].memory.id == answer
    assert found[0].match in ("meaning", "both")


def test_hybrid_search_keeps_a_word_match_first(hybrid_vault: Vault) -> None:
    fill(hybrid_vault)
    found = hybrid_vault.search_memory(query="teal logo", namespace=NS)
    assert found.mode == "hybrid"
    assert found[0].memory.title == "Logo colours"
    assert found[0].match == "both"
    assert "[teal]" in found[0].snippet or "[logo]" in found[0].snippet.lower()


def test_filters_choose_memories_before_ranking(hybrid_vault: Vault) -> None:
    fill(hybrid_vault)
    other = hybrid_vault.save_memory(
        namespace="project/other", title="Small batches", content=ANSWER_TEXT, kind="decision"
    )
    tagged = hybrid_vault.save_memory(
        namespace=NS, title="Batch size", content=ANSWER_TEXT, kind="decision", tags=["db"]
    )
    in_ns = hybrid_vault.search_memory(query=QUESTION, namespace=NS)
    assert other.id not in [h.memory.id for h in in_ns]
    decisions = hybrid_vault.search_memory(query=QUESTION, kind="decision")
    assert {h.memory.id for h in decisions} == {other.id, tagged.id}
    by_tag = hybrid_vault.search_memory(query=QUESTION, tags=["db"])
    assert [h.memory.id for h in by_tag] == [tagged.id]
    assert hybrid_vault.search_memory(query=QUESTION, tags=["db", "absent"]) == []
    assert hybrid_vault.search_memory(query=QUESTION, kind="risk") == []


def test_full_text_search_honours_kind_and_tags_too(vault: Vault) -> None:
    vault.save_memory(namespace=NS, title="Batch size", content="1000 rows", kind="decision")
    tagged = vault.save_memory(namespace=NS, title="Batch rows", content="rows", tags=["db"])
    found = vault.search_memory(query="rows", tags=["db"])
    assert found.mode == "fts" and [h.memory.id for h in found] == [tagged.id]
    assert [h.memory.title for h in vault.search_memory(query="rows", kind="decision")] == [
        "Batch size"
    ]


def test_a_memory_edited_by_hand_is_found_by_its_new_meaning(hybrid_vault: Vault) -> None:
    answer = fill(hybrid_vault)
    assert hybrid_vault.search_memory(query=QUESTION, namespace=NS)[0].memory.id == answer
    path = note_path(hybrid_vault, answer)
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace(ANSWER_TEXT, "Dogs need a walk twice a day, rain or shine."),
        encoding="utf-8",
    )
    hybrid_vault.rescan()  # as the periodic rescan does for an edit made in Obsidian
    hits = hybrid_vault.search_memory(query="how often to exercise my pet", namespace=NS)
    assert hits[0].memory.id == answer
    again = hybrid_vault.search_memory(query=QUESTION, namespace=NS)
    assert answer not in [h.memory.id for h in again[:1]]


def test_a_deleted_memory_leaves_no_vector_behind(hybrid_vault: Vault) -> None:
    answer = fill(hybrid_vault)
    hybrid_vault.search_memory(query=QUESTION, namespace=NS)
    assert hybrid_vault.doctor().search["vectors"] == 4
    note_path(hybrid_vault, answer).unlink()
    hits = hybrid_vault.search_memory(query=QUESTION, namespace=NS)
    assert answer not in [h.memory.id for h in hits]
    assert hybrid_vault.doctor().search["vectors"] == 3


def test_reindex_rebuilds_every_vector(hybrid_vault: Vault) -> None:
    answer = fill(hybrid_vault)
    report = hybrid_vault.reindex()
    assert report.vectors == 4
    status = hybrid_vault.doctor().search
    assert (status["vectors"], status["waiting_for_vector"]) == (4, 0)
    assert hybrid_vault.search_memory(query=QUESTION, namespace=NS)[0].memory.id == answer


def test_vectors_are_derived_the_notes_hold_none(hybrid_vault: Vault) -> None:
    fill(hybrid_vault)
    hybrid_vault.search_memory(query=QUESTION, namespace=NS)
    for note in hybrid_vault.path.rglob("*.md"):
        assert "vector" not in note.read_text(encoding="utf-8").lower()
    (hybrid_vault.path / ".agent-mem-vault" / "index.sqlite3").unlink()
    hybrid_vault.close()
    assert hybrid_vault.search_memory(query=QUESTION, namespace=NS)[0].memory.title == (
        ANSWER_TITLE
    )


# -- which mode answers -------------------------------------------------------------------------


def test_search_is_full_text_when_embeddings_are_off(vault_path: Path) -> None:
    v = Vault(vault_path, durable=False, embeddings=EmbeddingSettings(backend="off"))
    v.init()
    fill(v)
    found = v.search_memory(query=QUESTION, namespace=NS)
    assert found.mode == "fts"
    assert "AGENT_MEM_VAULT_EMBEDDINGS=off" in (found.reason or "")
    with pytest.raises(InvalidInputError) as err:
        v.search_memory(query=QUESTION, mode="hybrid")
    assert err.value.code == "embeddings_unavailable"


def test_search_is_full_text_when_the_embeddings_extra_is_not_installed(tmp_path: Path) -> None:
    # A real process in which onnxruntime cannot be imported, as without the extra.
    script = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "import importlib.util as u; real = u.find_spec\n"
        "u.find_spec = lambda n, *a: None if n == 'onnxruntime' else real(n, *a)\n"
        "from agent_mem_vault.vault import Vault\n"
        f"v = Vault({str(tmp_path / 'v')!r}); v.init()\n"
        "v.save_memory(namespace='p/x', title='Backfill', content='batches of 1000')\n"
        "r = v.search_memory(query='backfill')\n"
        "print(r.mode, len(r), r.reason)\n"
        "print(v.doctor().search['mode'])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEM_VAULT")}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("fts 1 the embeddings extra is not installed")
    assert second == "fts"


def test_bad_search_mode_and_bad_embedding_settings_are_refused(hybrid_vault: Vault) -> None:
    with pytest.raises(InvalidInputError) as err:
        hybrid_vault.search_memory(query="x", mode="semantic")
    assert err.value.code == "invalid_mode"
    for env in (
        {"AGENT_MEM_VAULT_EMBEDDINGS": "magic"},
        {"AGENT_MEM_VAULT_EMBEDDINGS": "openai"},
        {"AGENT_MEM_VAULT_EMBEDDING_MIN_SIMILARITY": "high"},
    ):
        with pytest.raises(InvalidInputError) as bad:
            EmbeddingSettings.from_env(env)
        assert bad.value.code == "invalid_setting"


def test_a_model_folder_without_a_model_is_reported_not_searched_with(
    vault_path: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-model"
    empty.mkdir()
    v = Vault(vault_path, durable=False, embeddings=EmbeddingSettings("local", model_dir=empty))
    v.init()
    fill(v)
    found = v.search_memory(query=QUESTION)
    assert found.mode == "fts"
    assert "holds no model.onnx" in (found.reason or "")


def test_rrf_fuse_rewards_agreement_between_the_rankings() -> None:
    fused = rrf_fuse([["a", "b", "c"], ["c", "d"]])
    assert [key for key, _ in fused] == ["c", "a", "b", "d"]


# -- writes never wait for the model ---------------------------------------------------------------


class _EmbeddingsServer:
    """A local ``/v1/embeddings`` server computing real vectors; it can hold requests back."""

    def __init__(self, embedder: OnnxEmbedder) -> None:
        self.embedder = embedder
        self.gate = threading.Event()
        self.gate.set()
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body})
                outer.gate.wait(30)
                if self.path != "/v1/embeddings" or not isinstance(body.get("input"), list):
                    self.send_response(404)
                    self.end_headers()
                    return
                vectors = outer.embedder.embed(body["input"])
                payload = {
                    "object": "list",
                    "model": body["model"],
                    "data": [
                        {"object": "embedding", "index": i, "embedding": v.tolist()}
                        for i, v in enumerate(vectors)
                    ],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoint() -> Iterator[_EmbeddingsServer]:
    model, tokenizer = model_files()
    server = _EmbeddingsServer(OnnxEmbedder(model, tokenizer, model="served"))
    yield server
    server.close()


def test_an_openai_compatible_endpoint_answers_hybrid_searches(
    vault_path: Path, endpoint: _EmbeddingsServer
) -> None:
    settings = EmbeddingSettings.from_env(
        {
            "AGENT_MEM_VAULT_EMBEDDINGS": "openai",
            "AGENT_MEM_VAULT_EMBEDDING_URL": endpoint.url,
            "AGENT_MEM_VAULT_EMBEDDING_MODEL": "all-minilm",
            "AGENT_MEM_VAULT_EMBEDDING_API_KEY": "sk-local",
        }
    )
    v = Vault(vault_path, durable=False, embeddings=settings)
    v.init()
    answer = fill(v)
    found = v.search_memory(query=QUESTION, namespace=NS)
    assert found.mode == "hybrid" and found[0].memory.id == answer
    assert all(r["path"] == "/v1/embeddings" for r in endpoint.requests)
    assert {r["body"]["model"] for r in endpoint.requests} == {"all-minilm"}
    status = v.doctor().search
    assert (status["backend"], status["url"], status["vectors"]) == ("openai", endpoint.url, 4)


def test_an_endpoint_that_fails_leaves_search_full_text_with_the_reason(vault_path: Path) -> None:
    settings = EmbeddingSettings(
        backend="openai", url="http://127.0.0.1:9/v1", model="m", api_key=None
    )
    v, reason = searched_by_full_text(vault_path, settings)
    assert "the embeddings endpoint" in reason
    # No memory has both words: the memories with either one still answer.
    some = v.search_memory(query="teal rainbow")
    assert some.mode == "fts" and [h.memory.title for h in some] == ["Logo colours"]


def test_a_memory_saved_while_the_model_is_busy_is_found_by_words_at_once_then_by_meaning(
    vault_path: Path, endpoint: _EmbeddingsServer
) -> None:
    settings = EmbeddingSettings(backend="openai", url=endpoint.url, model="m", api_key=None)
    v = Vault(vault_path, durable=False, embeddings=settings, lock_timeout=1.0)
    v.init()
    fill(v)
    endpoint.gate.clear()  # the model is "loading": every embedding request waits
    searcher = threading.Thread(target=v.search_memory, kwargs={"query": QUESTION})
    searcher.start()
    while not endpoint.requests:
        time.sleep(0.01)
    # The search waits for the model outside the vault lock: a write goes through
    # (with a 1 s lock timeout) and is found by its words straight away.
    saved = v.save_memory(namespace=NS, title="Pet care", content="Dogs need a walk twice a day.")
    assert [h.memory.id for h in v.search_memory(query="dogs walk", mode="fts")] == [saved.id]
    assert searcher.is_alive()
    endpoint.gate.set()
    searcher.join(30)
    found = v.search_memory(query="how frequently should I exercise my puppy")
    assert found.mode == "hybrid"
    assert found[0].memory.id == saved.id and found[0].match == "meaning"


QUERY = "how big should a backfill batch be"


def test_a_search_counts_every_word_match_whether_its_vector_is_there_yet_or_not(
    hybrid_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forty memories alike, and a search that may embed one batch of them only
    # (the budget spent at once): the rest still wait for their vectors.
    from agent_mem_vault.vault.ops import memories

    monkeypatch.setattr(memories, "PENDING_BUDGET", 0.0)
    # Not all its words are in any memory; "backfill" is in every title.
    for i in range(40):
        hybrid_vault.save_memory(
            namespace=NS,
            title=f"Backfill batches, run {i}",
            content="Batches of 1000 rows keep the lock time under 50 ms.",
        )
    first = hybrid_vault.search_page(query=QUERY, limit=10)
    assert first.mode == "hybrid"
    assert hybrid_vault.embed_pending() > 0  # some were still waiting: the case is real
    assert first.total == 40
    # Every one of them can be paged to, from the first search's pages as it went on.
    seen = {h.memory.id for h in first.hits}
    offset = first.next_offset
    while offset is not None:
        page = hybrid_vault.search_page(query=QUERY, limit=10, offset=offset)
        assert page.total == 40
        seen |= {h.memory.id for h in page.hits}
        offset = page.next_offset
    assert len(seen) == 40
    # With every vector there, the same count: meaning found nothing beyond the words.
    assert hybrid_vault.search_page(query=QUERY, limit=10).total == 40


def test_a_hybrid_total_counts_the_word_matches_and_those_found_by_meaning_alone(
    hybrid_vault: Vault,
) -> None:
    answer = fill(hybrid_vault)
    found = hybrid_vault.search_page(query=QUESTION, limit=10)
    by_match = {h.memory.id: h.match for h in found.hits}
    assert by_match[answer] in ("both", "meaning")
    assert found.total == len(found.hits)


# -- the CLI, doctor and MCP say which mode answered --------------------------------------------


def test_cli_search_and_doctor_say_which_mode_answered(tmp_path: Path, model_dir: Path) -> None:
    vault = tmp_path / "vault"
    env = cli_env(vault, AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR=str(model_dir))

    def cli(*args: str) -> str:
        # Outside any repository: no namespace is found from git.
        proc = subprocess.run(
            [str(BIN), *args], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path
        )
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        return proc.stdout

    cli("init")
    cli("memory", "save", "-n", NS, "-t", ANSWER_TITLE, "-c", ANSWER_TEXT, "--kind", "decision")
    cli("memory", "save", "-n", NS, "-t", OTHERS[2][0], "-c", OTHERS[2][1])
    found = json.loads(cli("memory", "search", QUESTION, "--json"))
    assert found["mode"] == "hybrid" and found["hits"][0]["memory"]["title"] == ANSWER_TITLE
    assert found["hits"][0]["match"] in ("meaning", "both")
    text = cli("memory", "search", QUESTION, "--kind", "decision")
    assert ANSWER_TITLE in text and text.rstrip().endswith("search mode: hybrid")
    fts = json.loads(cli("memory", "search", QUESTION, "--mode", "fts", "--json"))
    assert fts["mode"] == "fts"
    doctor = json.loads(cli("doctor", "--json"))["search"]
    assert doctor["mode"] == "hybrid" and doctor["model_dir"] == str(model_dir)
    assert doctor["model_present"] is True and doctor["vectors"] == 2
    assert f"model {model_dir} at {model_dir}" in cli("doctor")


def test_doctor_says_where_the_default_model_is_cached(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    env = cli_env(vault, AGENT_MEM_VAULT_EMBEDDINGS="auto", XDG_CACHE_HOME=str(tmp_path / "c"))
    subprocess.run([str(BIN), "init"], env=env, check=True, capture_output=True, timeout=60)
    proc = subprocess.run(
        [str(BIN), "doctor", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    status = json.loads(proc.stdout)["search"]
    cache = tmp_path / "c" / "agent-mem-vault" / "models" / "all-MiniLM-L6-v2"
    assert status["model_dir"] == str(cache) and status["model_present"] is False
    assert "on first search" in status["detail"]


async def test_mcp_search_memory_over_stdio_reports_the_mode(
    tmp_path: Path, model_dir: Path
) -> None:
    vault = tmp_path / "vault"
    v = Vault(vault, durable=False, embeddings=EmbeddingSettings(backend="off"))
    v.init()
    fill(v)
    env = cli_env(vault, AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR=str(model_dir))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent_mem_vault.cli.main", "serve", "--agent", "codex", "--namespace", NS],
        env=env,
    )
    async with Client(params) as client:
        result = await client.call_tool("search_memory", {"query": QUESTION, "kind": "note"})
        assert not result.is_error
        data = result.structured_content
        assert data["mode"] == "hybrid" and data["reason"] is None
        assert data["hits"][0]["memory"]["title"] == ANSWER_TITLE
        assert "(search mode: hybrid)" in "".join(getattr(b, "text", "") for b in result.content)
        tagged = await client.call_tool("search_memory", {"query": QUESTION, "tags": ["none"]})
        assert tagged.structured_content["count"] == 0


def test_a_second_vault_handle_sees_vectors_and_edits_made_by_the_first(
    vault_path: Path, local: EmbeddingSettings
) -> None:
    # Two handles on one folder, as two agents' MCP servers: each keeps its own
    # copy of the vectors, which follows what the other one adds and removes.
    first = Vault(vault_path, durable=False, embeddings=local)
    first.init()
    second = Vault(vault_path, durable=False, embeddings=local)
    answer = fill(first)
    assert second.search_memory(query=QUESTION, namespace=NS)[0].memory.id == answer
    pet = first.save_memory(namespace=NS, title="Pet care", content="Dogs need a walk daily.")
    first.embed_pending()
    puppy = "how frequently should I exercise my puppy"
    assert second.search_memory(query=puppy, namespace=NS)[0].memory.id == pet.id
    note_path(first, pet.id).unlink()
    first.rescan()
    assert pet.id not in [h.memory.id for h in second.search_memory(query=puppy, namespace=NS)]
    first.close()
    second.close()


def test_a_failed_model_download_is_remembered_so_searches_do_not_wait_for_it(
    vault_path: Path, tmp_path: Path
) -> None:
    # Offline (HF_HUB_OFFLINE=1 in the tests): the first use tries to download
    # the default model into the cache folder, fails, and says so.
    settings = EmbeddingSettings.from_env(
        {"AGENT_MEM_VAULT_EMBEDDINGS": "auto", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    )
    _, reason = searched_by_full_text(vault_path, settings)
    assert "could not download sentence-transformers/all-MiniLM-L6-v2" in reason
    mark = settings.local_dir / ".download-failed"
    assert mark.is_file()
    again = Vault(vault_path, durable=False, embeddings=settings).search_memory(query="teal")
    assert again.mode == "fts" and "tried 0 min ago" in (again.reason or "")


def test_a_model_download_fails_at_once_where_the_hub_does_not_resolve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Online mode, but the hub's name does not resolve (``.invalid`` never does):
    # no five retries with backoff, one clear refusal, remembered like any other.
    from huggingface_hub import constants

    from agent_mem_vault.vault.index.embeddings import EmbeddingUnavailable, download_default_model

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://hub.invalid")
    folder = tmp_path / "model"
    with pytest.raises(EmbeddingUnavailable) as refused:
        download_default_model(folder)
    assert "http://hub.invalid is not reachable" in str(refused.value)
    assert f"copy model.onnx and tokenizer.json into {folder}" in str(refused.value)
    assert (folder / ".download-failed").is_file()


def test_a_memory_row_updated_in_place_is_queued_for_a_new_vector(hybrid_vault: Vault) -> None:
    # The index may one day update a changed memory in place instead of delete +
    # insert; its vector must not outlive the text it described.
    answer = fill(hybrid_vault)
    hybrid_vault.search_memory(query=QUESTION, namespace=NS)
    idx = hybrid_vault._upkeep.handle()
    with idx.transaction():
        idx.conn.execute("UPDATE memories SET title = 'Renamed' WHERE id = ?", (answer,))
    status = hybrid_vault.doctor().search
    assert (status["vectors"], status["waiting_for_vector"]) == (3, 1)


def test_nearest_is_exact_with_and_without_filters(vault_path: Path) -> None:
    """The in-memory search against a brute-force ranking, for no filter, a
    filter keeping few rows (gathered first) and one keeping most (picked after)."""
    import numpy as np

    from agent_mem_vault.vault.index.vectors import VectorCache, ensure_vector_schema, store_vectors

    vault = Vault(vault_path, durable=False, embeddings=EmbeddingSettings(backend="off"))
    vault.init()
    for i in range(120):
        vault.save_memory(
            namespace=f"{NS}/a" if i % 10 == 0 else NS,
            title=f"Memory {i}",
            content=f"text {i}",
            kind="risk" if i % 3 == 0 else "note",
        )
    idx = vault._upkeep.handle()
    rng = np.random.default_rng(3)
    with idx.transaction():
        ensure_vector_schema(idx.conn, "test")
        rows = idx.conn.execute("SELECT rowid, namespace, kind FROM memories").fetchall()
        vectors = rng.standard_normal((len(rows), 8)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store_vectors(idx.conn, "test", [r[0] for r in rows], vectors)
    query = vectors[5] + 0.3 * rng.standard_normal(8).astype(np.float32)
    query /= np.linalg.norm(query)
    cache = VectorCache()
    for namespace, kind in ((None, None), (f"{NS}/a", None), (NS, "note"), (NS, None)):
        allowed = [
            i
            for i, (_rowid, ns, k) in enumerate(rows)
            if (namespace is None or ns == namespace or ns.startswith(namespace + "/"))
            and (kind is None or k == kind)
        ]
        scores = vectors[allowed] @ query
        order = np.argsort(-scores)
        expected = [(rows[allowed[j]][0], float(scores[j])) for j in order if scores[j] >= 0.1]
        got = cache.nearest(
            idx.conn, query, namespace=namespace, kind=kind, tags=(), limit=7, min_similarity=0.1
        )
        assert [r for r, _s in got] == [r for r, _s in expected[:7]], (namespace, kind)
        assert [s for _r, s in got] == pytest.approx([s for _r, s in expected[:7]], abs=1e-5)
    vault.close()
