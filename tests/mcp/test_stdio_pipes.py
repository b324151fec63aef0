"""stdin and stdout as ``serve`` meets them: pipes, a file, stdout shared with stderr.

On pipes the event loop reads stdin and writes stdout itself; on what it cannot
watch (a regular file) the SDK's transport serves. Either way every request is
answered, in full, and the server ends cleanly when its client is gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from agent_mem_vault.mcp import ERROR_META_KEY
from agent_mem_vault.vault.folder.files import LOCK_FILE
from tests.cli_process import cli_env
from tests.mcp_wire import SERVE, message

from .conftest import NS

INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}
TIMEOUT = 60.0  # only to end a test whose server never answers


OPENING = message(0, "initialize", INITIALIZE) + message(None, "notifications/initialized")


def call(id_: int, tool: str, arguments: dict[str, Any]) -> bytes:
    return message(id_, "tools/call", {"name": tool, "arguments": arguments})


def start(vault_path: Path, **streams: Any) -> subprocess.Popen[bytes]:
    env = cli_env(vault=vault_path)
    return subprocess.Popen([*SERVE, "--namespace", NS], env=env, **streams)


def exchange(
    proc: subprocess.Popen[bytes], data: bytes, count: int
) -> tuple[dict[Any, dict[str, Any]], bytes]:
    """Send ``data``, read ``count`` answers, then close stdin (which ends the server).

    stdin stays open until then: at its end, calls still running are cancelled.
    """
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(data)
    proc.stdin.flush()
    got = answers(b"".join(proc.stdout.readline() for _ in range(count)))
    _, stderr = proc.communicate(timeout=TIMEOUT)
    return got, stderr


def answers(output: bytes) -> dict[Any, dict[str, Any]]:
    parsed = [json.loads(text) for text in output.splitlines() if text.strip()]
    return {answer["id"]: answer for answer in parsed}


def test_answers_larger_than_the_pipe_all_arrive_whole_while_the_client_reads_late(
    vault_path: Path,
) -> None:
    context = "0123456789" * 15_000  # each answer carries it twice: ~300 KB, past a 64 KB pipe
    proc = start(vault_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(OPENING)
    proc.stdin.write(call(1, "create_handoff", {"to": "codex", "summary": "s", "context": context}))
    proc.stdin.write(b"".join(call(10 + i, "peek_handoff", {}) for i in range(6)))
    proc.stdin.write(message(20, "ping", {}))
    proc.stdin.flush()
    # Read only now: each answer is bigger than the pipe holds, so the server's
    # writes must wait for the reader, not fail or tear a line.
    assert proc.stdout is not None
    got = answers(b"".join(proc.stdout.readline() for _ in range(9)))
    _, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, stderr.decode()
    assert set(got) == {0, 1, 10, 11, 12, 13, 14, 15, 20}
    for i in range(6):
        result = got[10 + i]["result"]
        assert result["structuredContent"]["handoff"]["context"] == context
    assert b"Traceback" not in stderr


def test_a_request_of_several_megabytes_is_read_and_answered(vault_path: Path) -> None:
    huge = "x" * 3_000_000
    proc = start(vault_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    request = call(1, "create_handoff", {"to": "codex", "summary": "s", "context": huge})
    got, stderr = exchange(proc, OPENING + request + message(2, "ping"), 3)
    assert got[1]["result"]["_meta"][ERROR_META_KEY]["code"] == "too_large"
    assert got[2]["result"] == {}
    assert proc.returncode == 0, stderr.decode()


def test_cr_lf_and_undecodable_bytes_are_read_as_the_sdks_transport_reads_them(
    vault_path: Path,
) -> None:
    proc = start(vault_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    crlf = message(1, "ping").replace(b"\n", b"\r\n")
    # An undecodable byte becomes U+FFFD, as in the SDK's transport: still a valid ping.
    undecodable = (
        b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": {"x": "\xff"}}}\n'
    )
    got, stderr = exchange(proc, OPENING + crlf + undecodable, 3)
    assert set(got) == {0, 1, 2}  # no parse error for an empty line after the CR
    assert got[1]["result"] == {} and got[2]["result"] == {}
    assert proc.returncode == 0, stderr.decode()


def test_a_client_that_closes_the_servers_stdout_ends_it_cleanly(vault_path: Path) -> None:
    proc = start(vault_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(OPENING)
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    proc.stdout.close()
    # Its answer cannot be written: the server ends, though stdin stays open.
    proc.stdin.write(message(1, "ping"))
    proc.stdin.flush()
    assert proc.wait(timeout=TIMEOUT) == 0
    with proc.stderr:
        assert b"Traceback" not in proc.stderr.read()
    proc.stdin.close()


def test_stdout_shared_with_stderr_stays_blocking_and_answers(vault_path: Path) -> None:
    proc = start(
        vault_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(OPENING)
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    # The open file behind stdout is stderr's too: making it non-blocking would make
    # the server's own messages on stderr fail.
    flags = (Path(f"/proc/{proc.pid}/fdinfo/2").read_text().split("flags:")[1]).split()[0]
    assert not int(flags, 8) & os.O_NONBLOCK
    got, _ = exchange(proc, call(1, "peek_handoff", {}), 1)
    assert got[1]["result"]["isError"] is False
    assert proc.returncode == 0


def test_stdin_from_a_regular_file_is_served_by_the_sdks_transport(
    vault_path: Path, tmp_path: Path
) -> None:
    requests = tmp_path / "requests.jsonl"
    # The file ends at once, and calls still running when stdin ends are cancelled:
    # what is answered is what the server answers before reading on.
    requests.write_bytes(OPENING + b"{not json\n")
    with requests.open("rb") as stdin:
        proc = start(vault_path, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    got = answers(stdout)
    assert got[0]["result"]["serverInfo"]["name"] == "agent-mem-vault"
    assert got[None]["error"]["code"] == -32700  # unreadable lines are answered here too
    assert proc.returncode == 0 and b"Traceback" not in stderr


def test_stdout_to_a_regular_file_is_served_by_the_sdks_transport(
    vault_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "answers.jsonl"
    with out.open("wb") as stdout:
        proc = start(vault_path, stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.PIPE)
        assert proc.stdin is not None
        proc.stdin.write(OPENING + call(1, "peek_handoff", {}))
        proc.stdin.flush()
        # Nothing to read on a pipe: wait until the answer is in the file.
        deadline = time.monotonic() + TIMEOUT
        while 1 not in answers(out.read_bytes()) and time.monotonic() < deadline:
            time.sleep(0.05)
        _, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, stderr.decode()
    assert answers(out.read_bytes())[1]["result"]["isError"] is False


def test_a_ping_is_answered_while_a_write_waits_for_the_vaults_lock(vault_path: Path) -> None:
    proc = start(vault_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(OPENING)
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    # Another writer holds the vault: the create waits on the worker, the loop does not.
    with (vault_path / LOCK_FILE).open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc.stdin.write(call(1, "create_handoff", {"to": "codex", "summary": "s", "context": "c"}))
        proc.stdin.write(message(2, "ping"))
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        fcntl.flock(held, fcntl.LOCK_UN)
    assert first == {"jsonrpc": "2.0", "id": 2, "result": {}}
    created = json.loads(proc.stdout.readline())
    assert created["id"] == 1 and created["result"]["isError"] is False
    got, _ = exchange(proc, call(3, "peek_handoff", {}), 1)
    assert got[3]["result"]["structuredContent"]["handoff"]["summary"] == "s"
    assert proc.returncode == 0
