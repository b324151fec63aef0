"""``agent-mem-vault sync``, ``sync init``, ``sync --status``, ``init --remote`` and doctor's
sync lines, as real processes, each machine with its own HOME."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.cli_process import BIN, Proc, cli_env, run_process, succeeded
from tests.git_remote import bare_repo, git, git_env, remote_tree

NS = "project/harbor-api"


def run(home: Path, vault: Path, *args: str, check: bool = True, cwd: Path | None = None) -> Proc:
    """``agent-mem-vault ARGS`` on ``vault``, as the machine whose HOME is ``home`` (its git
    settings there), in ``cwd`` (``home`` unless given)."""
    # Each sync is the test's own.
    env = cli_env(vault=vault, **git_env(home), AGENT_MEM_VAULT_SYNC_AUTO="off")
    proc = run_process([BIN, *args], env=env, cwd=cwd or home)
    return succeeded(proc) if check else proc


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return bare_repo(tmp_path / "remote.git")


def test_a_vault_joins_a_remote_and_a_second_machine_joins_it_at_init(
    tmp_path: Path, remote: Path
) -> None:
    home_a, home_b = tmp_path / "home-a", tmp_path / "home-b"
    a, b = tmp_path / "a", tmp_path / "b"
    run(home_a, a, "init")
    hid = run(home_a, a, "create", "--to", "codex", "-n", NS, "-s", "S", "-c", "C").stdout.strip()
    out = run(home_a, a, "sync", "init", str(remote)).stdout
    assert f"the vault ⇄ {remote}: pushed" in out
    out = run(home_b, b, "init", "--remote", str(remote)).stdout
    assert "Vault ready" in out and "1 handoff" in out and "arrived" in out
    read = run(home_b, b, "read", "--agent", "codex", "-n", NS, "--json")
    assert json.loads(read.stdout)["id"] == hid
    run(home_a, a, "sync")
    shown = json.loads(run(home_a, a, "show", hid, "--json").stdout)
    assert shown["status"] == "read"


def test_handoffs_and_peek_show_what_read_would_take_without_a_sync_first(
    tmp_path: Path, remote: Path
) -> None:
    home_a, home_b = tmp_path / "home-a", tmp_path / "home-b"
    a, b = tmp_path / "a", tmp_path / "b"
    run(home_a, a, "init", "--remote", str(remote))
    run(home_b, b, "init", "--remote", str(remote))
    hid = run(home_a, a, "create", "--to", "codex", "-n", NS, "-s", "S", "-c", "C").stdout.strip()
    run(home_a, a, "sync")
    listed = run(home_b, b, "handoffs", "-n", NS, "--json")
    assert [h["id"] for h in json.loads(listed.stdout)["handoffs"]] == [hid]
    assert listed.stderr == ""
    peeked = run(home_b, b, "peek", "--agent", "codex", "-n", NS, "--json")
    assert json.loads(peeked.stdout)["id"] == hid
    read = run(home_b, b, "read", "--agent", "codex", "-n", NS, "--json")
    assert json.loads(read.stdout)["id"] == hid


def test_sync_status_shows_the_remote_ahead_behind_and_the_last_error(
    tmp_path: Path, remote: Path
) -> None:
    home, vault = tmp_path / "home", tmp_path / "v"
    run(home, vault, "init")
    run(home, vault, "sync", "init", str(remote))
    run(home, vault, "create", "--to", "codex", "-n", NS, "-s", "S", "-c", "C")
    remote.rename(tmp_path / "gone.git")
    failed = run(home, vault, "sync", check=False)
    assert failed.returncode == 8, failed
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and str(remote) in lines[0] and "[remote_not_found]" in lines[0]
    assert "Traceback" not in failed.stderr
    status = run(home, vault, "sync", "--status").stdout
    assert f"sync: the vault ⇄ {remote}: 1 ahead, 0 behind" in status
    assert "last error" in status and "remote_not_found" in status
    data = json.loads(run(home, vault, "sync", "--status", "--json").stdout)
    assert data["routes"][0]["ahead"] == 1 and data["routes"][0]["error"]["code"]
    doctor = run(home, vault, "doctor", check=False).stdout
    assert f"sync: the vault ⇄ {remote}: 1 ahead" in doctor
    (tmp_path / "gone.git").rename(remote)
    assert "pushed" in run(home, vault, "sync").stdout
    assert any(p.startswith(f"{NS}/handoffs/") for p in remote_tree(remote))


def test_an_unreachable_remote_exits_6_in_one_line_naming_it(tmp_path: Path) -> None:
    home, vault = tmp_path / "home", tmp_path / "v"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"git://127.0.0.1:{port}/vault.git"  # nothing listens there
    run(home, vault, "init")
    proc = run(home, vault, "sync", "init", url, check=False)
    assert proc.returncode == 6, proc
    assert proc.stderr.count("\n") == 1 and url in proc.stderr
    assert "[remote_unreachable]" in proc.stderr
    assert not (vault / ".agent-mem-vault-sync").exists()


def test_a_remote_url_with_a_password_is_refused(tmp_path: Path) -> None:
    home, vault = tmp_path / "home", tmp_path / "v"
    run(home, vault, "init")
    proc = run(home, vault, "sync", "init", "https://me:s3cret@git.example/v.git", check=False)
    assert proc.returncode == 2
    assert "s3cret" not in proc.stderr and "credential helper" in proc.stderr
    assert "[remote_has_password]" in proc.stderr


def test_sync_without_a_remote_says_how_to_join_one(tmp_path: Path) -> None:
    home, vault = tmp_path / "home", tmp_path / "v"
    run(home, vault, "init")
    proc = run(home, vault, "sync", check=False)
    assert proc.returncode == 3 and "sync init" in proc.stderr
    assert "sync: none" in run(home, vault, "sync", "--status").stdout


def test_sync_remove_stops_syncing_and_keeps_the_notes(tmp_path: Path, remote: Path) -> None:
    home, vault = tmp_path / "home", tmp_path / "v"
    run(home, vault, "init")
    run(home, vault, "create", "--to", "codex", "-n", NS, "-s", "S", "-c", "C")
    run(home, vault, "sync", "init", str(remote))
    assert "No longer syncing" in run(home, vault, "sync", "remove").stdout
    assert "sync: none" in run(home, vault, "sync", "--status").stdout
    assert len(json.loads(run(home, vault, "handoffs", "--json").stdout)["handoffs"]) == 1


def test_sync_init_project_finds_the_namespace_and_the_clone_from_git(tmp_path: Path) -> None:
    home, vault = tmp_path / "home", tmp_path / "v"
    project = bare_repo(tmp_path / "harbor-api.git")
    clone = tmp_path / "src" / "harbor-api"
    git("clone", "--quiet", project, clone, env=git_env(home))
    run(home, vault, "init")
    run(home, vault, "create", "--to", "codex", "-n", NS, "-s", "S", "-c", "C")
    proc = run(home, vault, "sync", "init", "--project", cwd=clone)
    assert f"{NS} ⇄" in proc.stdout
    assert any(
        p.startswith(f"{NS}/handoffs/") for p in remote_tree(project, f"refs/agent-mem-vault/{NS}")
    )
