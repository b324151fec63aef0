"""A call that runs long does not hold up the server: it keeps answering, and the call
can be cancelled.

The long call is a real one: the first search of a server whose vault searches
by meaning loads the local embedding model (the real all-MiniLM-L6-v2 that the
dev extras ship) and embeds the memories that have no vector yet, which takes
a second or more. The server runs as ``serve`` on bare pipes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from tests.mcp_wire import RawServer, message, serving
from tests.vault.embedding_model import model_folder

from .conftest import NS

pytestmark = pytest.mark.slow

# "backfill" is in every memory's title: all forty match by words, so the total is
# forty however many of them the model has embedded when the search answers.
SEARCH = {"name": "search_memory", "arguments": {"query": "how big should a backfill batch be"}}


@pytest.fixture
def server(vault: Vault, tmp_path: Path) -> Iterator[RawServer]:
    for i in range(40):
        vault.save_memory(
            namespace=NS,
            title=f"Backfill batches, run {i}",
            content="Batches of 1000 rows keep the lock time under 50 ms.",
            kind="decision",
            agent="codex",
        )
    env = {
        "AGENT_MEM_VAULT_EMBEDDINGS": "local",
        "AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR": str(model_folder(tmp_path / "model")),
    }
    with serving(vault.path, "--namespace", NS, env=env) as raw:
        yield raw


def test_the_server_answers_a_ping_while_a_search_loads_its_model(server: RawServer) -> None:
    # Both in one write: the server has both before it answers either.
    server.write(message(1, "tools/call", SEARCH) + message(2, "ping", {}))
    first, second = server.lines(2)
    assert first == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert second["id"] == 1
    assert second["result"]["structuredContent"]["mode"] == "hybrid"
    assert second["result"]["structuredContent"]["total"] == 40


def test_a_cancelled_search_is_not_answered_and_the_next_calls_are(server: RawServer) -> None:
    cancel = message(None, "notifications/cancelled", {"requestId": 1, "reason": "Esc"})
    server.write(message(1, "tools/call", SEARCH) + cancel + message(2, "ping", {}))
    assert server.answer() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    again = server.request(3, "tools/call", SEARCH)
    # The next answer is the new search's: the cancelled one never gets one.
    assert again["id"] == 3
    assert again["result"]["structuredContent"]["total"] == 40
