"""How ``serve`` starts: handed to a warm process (cli/warm.py), or in its own process.

Each test runs on a runtime folder of its own. A first start finds no warm
process: it starts one and runs on its own meanwhile; a later start is handed
to the warm process once it listens.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_mem_vault.runs.process import parent_pid
from mcp import Client
from tests.cli_process import CLI, cli_env, run_process
from tests.mcp_wire import INIT, SERVE, RawServer, message
from tests.warm_process import handed_over_commands, warm_listening, warm_lock_held

from .conftest import NS, in_process, serve_params


@pytest.fixture
def own_warm_dir(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A runtime folder no warm process uses yet; its warm process leaves with it."""
    folder = tmp_path / "rt"
    yield {"AGENT_MEM_VAULT_RUNTIME_DIR": str(folder)}
    for sock in folder.glob("*.sock"):
        sock.unlink()


def start_warm(vault_path: Path, env: dict[str, str]) -> None:
    """A first start (stdin closed at once), then wait until its warm process listens."""
    first = RawServer(vault_path, env=env)
    assert first.finish()[0] == 0
    folder = Path(env["AGENT_MEM_VAULT_RUNTIME_DIR"])
    assert _wait_until(lambda: warm_listening(folder), timeout=60), _logs(folder)


def _logs(folder: Path) -> str:
    return "\n".join(log.read_text() for log in folder.glob("*.log"))


MODES = {
    "first start, while a warm process loads": {},
    "handed to a warm process": {},
    "in its own process": {"AGENT_MEM_VAULT_WARM": "0"},
}


@pytest.fixture(params=MODES)
def server(
    request: pytest.FixtureRequest, vault_path: Path, vault: Any, own_warm_dir: dict[str, str]
) -> RawServer:
    """``serve`` started in each of the MODES, the warm process listening first where the
    mode hands the start over to it."""
    env = {**own_warm_dir, **MODES[request.param]}
    if request.param == "handed to a warm process":
        start_warm(vault_path, env)
    return RawServer(vault_path, env=env)


@pytest.mark.slow
def test_requests_sent_before_the_server_has_loaded_are_all_answered(server: RawServer) -> None:
    # Everything at once, the moment the process exists: nothing may be lost.
    server.write(
        message(1, "initialize", INIT)
        + message(None, "notifications/initialized")
        + message(2, "tools/list", {})
        + message(3, "tools/call", {"name": "peek_handoff", "arguments": {"namespace": NS}})
        + message(4, "resources/templates/list", {})
        + message(5, "prompts/list", {})
    )
    answers = {a["id"]: a for a in server.lines(5)}
    status, rest, stderr = server.finish()

    assert sorted(answers) == [1, 2, 3, 4, 5]
    assert all("error" not in a for a in answers.values()), answers
    assert answers[1]["result"]["serverInfo"]["name"] == "agent-mem-vault"
    assert len(answers[2]["result"]["tools"]) == 14
    assert answers[3]["result"]["content"][0]["text"] == f"No pending handoff for codex in {NS}."
    assert {t["name"] for t in answers[4]["result"]["resourceTemplates"]} == {
        "project-brief",
        "pending-handoffs",
    }
    assert {p["name"] for p in answers[5]["result"]["prompts"]} == {
        "load-project-memory",
        "prepare-handoff",
    }
    assert (status, rest) == (0, b""), stderr.decode()
    assert b"Traceback" not in stderr


@pytest.mark.slow
async def test_the_sdk_client_sees_the_same_server_through_the_warm_process(
    vault_path: Path, vault: Any, own_warm_dir: dict[str, str]
) -> None:
    """tools/list with schemas, a call, resources and prompts: as from the server in-process."""

    async def session(client: Client) -> list[Any]:
        tools = await client.list_tools()
        call = await client.call_tool("list_handoffs", {"namespace": NS})
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        prompts = await client.list_prompts()
        prompt = await client.get_prompt("prepare-handoff", {"to": "codex"})
        info = [
            client.protocol_version,
            client.instructions,
            client.server_info,
            client.server_capabilities,
        ]
        return [
            r
            if r is None or isinstance(r, str)
            else r.model_dump(mode="json", by_alias=True, exclude_none=True)
            for r in (*info, tools, call, resources, templates, prompts, prompt)
        ]

    await anyio.to_thread.run_sync(start_warm, vault_path, own_warm_dir)
    params = serve_params(vault_path, "claude-code", "--namespace", NS)
    params.env.update(own_warm_dir)
    async with Client(params) as client:
        warm = await session(client)
    folder = Path(own_warm_dir["AGENT_MEM_VAULT_RUNTIME_DIR"])
    # Handed over, not run in its own process.
    assert handed_over_commands(folder) == ["serve --agent"]
    async with in_process(vault, agent="claude-code", namespace=NS) as client:
        direct = await session(client)
    assert warm == direct
    assert warm[2]["name"] == "agent-mem-vault"
    tools = warm[4]["tools"]
    assert len(tools) == 14
    assert all(t["inputSchema"]["type"] == "object" and t["outputSchema"] for t in tools)


@pytest.mark.slow
def test_a_server_whose_stdin_closes_at_once_exits_cleanly(server: RawServer) -> None:
    status, stdout, stderr = server.finish()  # closes stdin before anything was sent
    assert (status, stdout) == (0, b"")
    assert b"Traceback" not in stderr, stderr.decode()


def _wait_until(condition: Any, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_a_first_start_runs_on_its_own_and_the_second_is_handed_to_the_warm_process(
    vault_path: Path, vault: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "rt"
    # Idle long enough to outlast the first start, which runs on its own meanwhile.
    env = {"AGENT_MEM_VAULT_RUNTIME_DIR": str(folder), "AGENT_MEM_VAULT_WARM_IDLE": "20"}
    first = RawServer(vault_path, env=env)
    first.write(message(1, "initialize", INIT))
    assert first.lines(1)[0]["result"]["serverInfo"]["name"] == "agent-mem-vault"
    first.finish()
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert _wait_until(lambda: warm_listening(folder), timeout=60), _logs(folder)
    assert handed_over_commands(folder) == []  # the first start did not wait for it

    second = RawServer(vault_path, env=env)
    second.write(message(1, "initialize", INIT))
    assert second.lines(1)[0]["result"]["serverInfo"]["name"] == "agent-mem-vault"
    assert second.finish()[0] == 0
    assert handed_over_commands(folder) == ["serve --agent"]

    [sock] = folder.glob("*.sock")
    assert _wait_until(lambda: not warm_lock_held(folder) and not sock.exists(), timeout=90)


@pytest.mark.slow
def test_servers_started_at_once_with_no_warm_process_all_answer_without_waiting_for_one(
    vault_path: Path, vault: Any, own_warm_dir: dict[str, str]
) -> None:
    servers = [RawServer(vault_path, env=own_warm_dir) for _ in range(4)]
    for server in servers:
        server.write(message(1, "initialize", INIT))
    for server in servers:
        # A start that waited for the warm process's start timeout would stall here.
        assert "result" in server.lines(1, timeout=45)[0]
        assert server.finish()[0] == 0


@pytest.mark.slow
def test_terminating_the_command_ends_the_server_it_handed_over_to(
    vault_path: Path, vault: Any, own_warm_dir: dict[str, str]
) -> None:
    start_warm(vault_path, own_warm_dir)
    server = RawServer(vault_path, env=own_warm_dir)
    server.write(message(1, "initialize", INIT))
    server.lines(1)
    server.proc.send_signal(signal.SIGTERM)
    # Closing stdin right after races the signal: the status must still be SIGTERM's.
    status, stdout, _ = server.finish()  # stdout ends: the forked server is gone too
    assert status == 128 + signal.SIGTERM
    assert stdout == b""
    folder = Path(own_warm_dir["AGENT_MEM_VAULT_RUNTIME_DIR"])
    assert handed_over_commands(folder) == ["serve --agent"]


@pytest.mark.slow
def test_ctrl_c_stops_a_stdio_server_at_once_with_status_130(server: RawServer) -> None:
    server.write(message(1, "initialize", INIT))
    server.lines(1)
    server.proc.send_signal(signal.SIGINT)
    # stdin stays open: the server must not wait for it to close.
    status = server.proc.wait(timeout=30)
    _, _, stderr = server.finish()
    assert status == 130
    assert b"Traceback" not in stderr, stderr.decode()


@pytest.mark.slow
def test_on_a_terminal_serve_says_it_waits_for_an_mcp_client(
    vault_path: Path, vault: Any, own_warm_dir: dict[str, str]
) -> None:
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        SERVE,
        stdin=terminal,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=cli_env(vault=vault_path, **own_warm_dir),
    )
    os.close(terminal)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        rest = proc.stderr.read().decode()
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        os.close(controller)
    assert "waiting for an MCP client" in line and "Ctrl-C" in line
    assert rest == ""


def _warm_processes(folder: Path) -> list[int]:
    """Running warm processes whose socket is in ``folder``, found by command line.

    Only the listeners: a warm process forks a child for every connection (the
    probe of ``warm_listening`` too), with the same command line, until it ends.
    """
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"agent_mem_vault.cli.warm_server" in argv and any(
            arg.startswith(str(folder).encode()) for arg in argv
        ):
            found.append(int(proc.name))
    return [pid for pid in found if parent_pid(pid) not in found]


@pytest.mark.slow
def test_a_warm_process_that_cannot_start_leaves_the_command_to_run_here_and_is_not_retried(
    vault_path: Path, vault: Any, own_warm_dir: dict[str, str]
) -> None:
    folder = Path(own_warm_dir["AGENT_MEM_VAULT_RUNTIME_DIR"])
    # The warm process fails on this setting after loading; the command must not.
    env = {**own_warm_dir, "AGENT_MEM_VAULT_WARM_IDLE": "soon"}
    server = RawServer(vault_path, env=env)
    server.write(message(1, "initialize", INIT) + message(None, "notifications/initialized"))
    server.write(message(2, "tools/call", {"name": "peek_handoff", "arguments": {"namespace": NS}}))
    answers = server.lines(2)
    status, _, _ = server.finish()
    assert [a["id"] for a in answers] == [1, 2] and "result" in answers[1]
    assert status == 0
    assert _wait_until(lambda: not _warm_processes(folder) and any(folder.glob("*.failed")))
    [failed] = folder.glob("*.failed")
    record = json.loads(failed.read_text())
    assert "AGENT_MEM_VAULT_WARM_IDLE must be a number of seconds" in record["reason"]
    assert "AGENT_MEM_VAULT_WARM_IDLE" in record["fix"]
    assert "'soon'" in _logs(folder)

    again = RawServer(vault_path, env=env)
    again.write(message(1, "initialize", INIT))
    assert "result" in again.lines(1)[0]
    assert again.finish()[0] == 0
    assert _wait_until(lambda: not _warm_processes(folder))
    # No second warm process was started: it would have written its own record.
    assert json.loads(failed.read_text()) == record

    doctor = run_process([*CLI, "doctor", "--json"], env=cli_env(vault=vault_path, **env))
    fast_start = json.loads(doctor.stdout)["fast_start"]
    assert fast_start["state"] == "failed"
    assert fast_start["reason"] == record["reason"] and fast_start["fix"] == record["fix"]


@pytest.mark.slow
def test_a_runtime_folder_others_can_open_is_not_used(vault_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "shared-rt"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    server = RawServer(vault_path, env={"AGENT_MEM_VAULT_RUNTIME_DIR": str(folder)})
    server.write(message(1, "initialize", INIT))
    assert "result" in server.lines(1)[0]
    assert server.finish()[0] == 0
    assert list(folder.iterdir()) == []  # ran in its own process: no socket, no warm process


@pytest.mark.slow
def test_killing_the_command_outright_still_ends_the_server(
    vault_path: Path, own_warm_dir: dict[str, str]
) -> None:
    # SIGKILL cannot be forwarded: the child sees its caller's connection close.
    start_warm(vault_path, own_warm_dir)
    server = RawServer(vault_path, env=own_warm_dir)
    server.write(message(1, "initialize", INIT))
    server.lines(1)
    server.proc.kill()
    status, stdout, _ = server.finish()  # returns only once every writer of stdout is gone
    assert status == -signal.SIGKILL
    assert stdout == b""


def _has_socket(pid: int) -> bool:
    """Whether process ``pid`` holds a socket (the command's connection to the warm process)."""
    try:
        links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
    except OSError:
        return False
    return any(link.startswith("socket:") for link in links)


@pytest.mark.slow
def test_a_command_whose_warm_process_does_not_answer_ends_on_a_second_signal(
    vault_path: Path, vault: Any, own_warm_dir: dict[str, str]
) -> None:
    folder = Path(own_warm_dir["AGENT_MEM_VAULT_RUNTIME_DIR"])
    start_warm(vault_path, own_warm_dir)
    [warm] = _warm_processes(folder)
    os.kill(warm, signal.SIGSTOP)  # it accepts no connection and forks no child
    try:
        server = RawServer(vault_path, env=own_warm_dir)
        assert _wait_until(lambda: _has_socket(server.proc.pid))  # waiting for its pid
        # Two different signals: the same signal twice may reach the process as one.
        server.proc.send_signal(signal.SIGINT)
        server.proc.send_signal(signal.SIGTERM)
        status = server.proc.wait(timeout=30)
    finally:
        # The stdio it passed waits in the socket until the warm process reads it.
        os.kill(warm, signal.SIGCONT)
    _, _, stderr = server.finish()
    assert status in (130, -signal.SIGTERM), stderr.decode()
