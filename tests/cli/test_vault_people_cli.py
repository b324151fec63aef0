"""The vault from the command line as a person meets it: in a repository (the namespace
found from git), with memories to correct and forget, with their own notes and dashboard,
and on a vault they may only read. Every command is a real ``agent-mem-vault`` process."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli_process import BIN, Proc, cli_env, run_process, succeeded
from tests.git_remote import git
from tests.other_user import needs_root, open_folder, run_as_nobody

from .test_vault_cli import NS, run, run_json, vault

__all__ = ["open_folder", "vault"]  # fixtures, used by name


def in_repo(cwd: Path, vault: Path, *args: str, check: bool = True) -> Proc:
    proc = run_process([BIN, *args], env=cli_env(vault=vault), cwd=cwd, timeout=60)
    return succeeded(proc) if check else proc


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "harbor-api"
    path.mkdir()
    git("init", "-q", path)
    git("-C", path, "remote", "add", "origin", "git@example:acme/harbor-api.git")
    (path / "app").mkdir()
    return path / "app"


def test_every_command_that_takes_a_namespace_finds_it_from_git_and_says_so(
    vault: Path, repo: Path
) -> None:
    said = f"namespace: {NS} (from the git repository {repo.parent.resolve()}"
    made = in_repo(repo, vault, "create", "--to", "codex", "-s", "s", "-c", "c")
    assert said in made.stderr
    hid = made.stdout.strip()
    assert run_json(vault, "show", hid)["namespace"] == NS
    saved = in_repo(
        repo, vault, "memory", "save", "-t", "Tabs", "-c", "We use tabs", "-k", "decision"
    )
    assert said in saved.stderr
    for args in (
        ["peek", "--agent", "codex"],
        ["brief"],
        ["handoffs"],
        ["memory", "search", "tabs"],
        ["memory", "list"],
        ["read", "--agent", "codex"],
    ):
        proc = in_repo(repo, vault, *args)
        assert said in proc.stderr, args
    # Given, it is used as given, and nothing is said.
    quiet = in_repo(repo, vault, "handoffs", "-n", "project/other")
    assert quiet.stderr == ""


def test_inside_a_repository_all_namespaces_is_one_flag_away(vault: Path, repo: Path) -> None:
    run(vault, "memory", "save", "-n", "project/other", "-t", "Elsewhere", "-c", "x")
    here = json.loads(in_repo(repo, vault, "memory", "list", "--json").stdout)
    everywhere = json.loads(in_repo(repo, vault, "memory", "list", "-A", "--json").stdout)
    assert here["total"] == 0 and everywhere["total"] == 1


def test_outside_a_repository_a_command_that_needs_a_namespace_says_to_pass_one(
    vault: Path, tmp_path: Path
) -> None:
    lone = tmp_path / "lone"
    lone.mkdir()
    proc = in_repo(lone, vault, "brief", check=False)
    assert proc.returncode == 2
    assert "--namespace" in proc.stderr and "not inside a git repository" in proc.stderr


def test_a_non_ascii_namespace_on_the_command_line_says_ascii(vault: Path) -> None:
    proc = run(vault, "brief", "-n", "project/Café", check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "ASCII" in proc.stderr and "'Cafe'" in proc.stderr


def test_memory_list_get_update_forget_restore_and_purge_from_the_cli(vault: Path) -> None:
    mid = run(
        vault, "memory", "save", "-n", NS, "-k", "decision",
        "-t", "Batches of 1000", "-c", "Lock < 50 ms",
    ).stdout.strip()  # fmt: skip
    listed = run(vault, "memory", "list", "-n", NS).stdout
    assert mid in listed and "Batches of 1000" in listed and "live" in listed
    assert "Lock < 50 ms" in run(vault, "memory", "get", mid).stdout
    new = run(vault, "memory", "update", mid, "-c", "Batches of 500", "-a", "codex").stdout.strip()
    assert run_json(vault, "memory", "get", mid)["superseded_by"] == new
    assert run_json(vault, "memory", "get", new)["supersedes"] == [mid]
    hits = run_json(vault, "memory", "search", "batches", "-n", NS)["hits"]
    assert [h["memory"]["id"] for h in hits] == [new]
    forgot = run(vault, "memory", "forget", new).stdout
    assert "forgotten" in forgot and f"memory restore {new}" in forgot
    assert run_json(vault, "memory", "search", "batches", "-n", NS)["hits"] == []
    assert run_json(vault, "memory", "list", "--status", "forgotten")["total"] == 1
    assert "live" in run(vault, "memory", "restore", new).stdout
    note = vault / run_json(vault, "memory", "get", new)["path"]
    purged = run_json(vault, "memory", "forget", new, "--purge")
    assert purged["purged"] is True and not note.exists()
    gone = run(vault, "memory", "get", new, check=False)
    assert gone.returncode == 3 and "[memory_not_found]" in gone.stderr


def test_show_prints_a_memory_as_well_as_a_handoff(vault: Path) -> None:
    mid = run(vault, "memory", "save", "-n", NS, "-t", "A memory", "-c", "its text").stdout.strip()
    shown = run(vault, "show", mid).stdout
    assert f"id:            {mid}" in shown and "# A memory\n\nits text" in shown
    assert run_json(vault, "show", mid)["title"] == "A memory"
    unknown = run(vault, "show", "3zzzzzzzzzzz2", check=False)
    assert unknown.returncode == 3 and "no handoff or memory" in unknown.stderr


def test_a_hand_written_note_is_found_and_doctor_says_what_it_filled_in(vault: Path) -> None:
    note = vault / NS / "memories" / "tabs.md"
    note.parent.mkdir(parents=True)
    note.write_text("# Tabs, not spaces\n\nThe linter wants tabs.\n")
    hits = run_json(vault, "memory", "search", "linter")["hits"]
    assert [h["memory"]["title"] for h in hits] == ["Tabs, not spaces"]
    doctor = run(vault, "doctor", check=False)
    assert doctor.returncode == 0, doctor.stdout
    assert f"information: {NS}/memories/tabs.md is written by hand" in doctor.stdout
    assert note.read_text() == "# Tabs, not spaces\n\nThe linter wants tabs.\n"


def test_init_leaves_a_dashboard_changed_by_hand_and_says_so(vault: Path) -> None:
    dashboard = vault / "_dashboards" / "memory.base"
    dashboard.write_text("views: []\n")
    out = run(vault, "init").stdout
    assert "Kept _dashboards/memory.base: it was changed by hand" in out
    assert dashboard.read_text() == "views: []\n"
    rewritten = run(vault, "reindex", "--rewrite-dashboard").stdout
    assert "yours is kept as _dashboards/memory.base.bak" in rewritten
    assert (vault / "_dashboards" / "memory.base.bak").read_text() == "views: []\n"


# -- a vault this user may only read ------------------------------------------------------

READS = [
    ["handoffs", "-n", NS, "--status", "all"],
    ["peek", "-a", "codex", "-n", NS],
    ["memory", "search", "batches"],
    ["memory", "list", "-n", NS],
    ["brief", "-n", NS],
    ["doctor"],
]


def _filled_vault(root: Path) -> tuple[str, str]:
    run(root, "init")
    hid = run(root, "create", "--to", "codex", "-n", NS, "-s", "Batch it", "-c", "c").stdout.strip()
    mid = run(root, "memory", "save", "-n", NS, "-t", "Batches of 1000", "-c", "x").stdout.strip()
    return hid, mid


def _unshare_ro() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    read_only = "mount --bind -o ro / / 2>/dev/null || mount -o remount,bind,ro / /"
    return run_process(["unshare", "-m", "sh", "-c", read_only]).returncode == 0


@pytest.mark.skipif(
    not _unshare_ro(), reason="needs a mount namespace (unshare -m) to mount read-only"
)
def test_every_read_works_on_a_read_only_disk_and_a_write_fails_naming_the_folder(
    vault: Path,
) -> None:
    hid, mid = _filled_vault(vault.parent / "ro")
    root = vault.parent / "ro"
    # Changed after the index was written: a read-only reader still sees it.
    (root / NS / "memories" / "later.md").write_text("# Batches later\n")
    script = (
        'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && '
        'for cmd in "$@"; do eval "$cmd" || echo "FAILED: $cmd"; done'
    )
    commands = [
        " ".join(f"'{a}'" for a in [str(BIN), *args, "--vault", str(root)]) + " > /dev/null"
        for args in [*READS, ["show", hid], ["memory", "get", mid]]
    ]
    write = f"'{BIN}' create --to codex -n {NS} -s s -c c --vault '{root}'; echo status=$?"
    search = f"'{BIN}' memory search later -n {NS} --json --vault '{root}'"
    proc = run_process(
        ["unshare", "-m", "sh", "-c", script, "sh", root, *commands, write, search], cwd=root.parent
    )
    assert "FAILED" not in proc.stdout, (proc.stdout, proc.stderr)
    assert "status=5" in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: cannot write to the vault {root}: its disk is mounted read-only; reads work, "
        "but a write needs a vault you can write to (check the folder's owner and "
        "permissions, or pass another --vault) [vault_read_only]"
    ]
    assert '"Batches later"' in proc.stdout


@needs_root
def test_another_users_vault_is_read_and_a_write_there_fails_in_one_line(
    open_folder: Path,
) -> None:
    root = open_folder / "vault"
    hid, mid = _filled_vault(root)
    before = sorted(p.name for p in (root / ".agent-mem-vault").iterdir())
    for args in [*READS, ["show", hid], ["memory", "get", mid]]:
        proc = run_as_nobody([str(BIN), *args, "--vault", str(root)], home=open_folder)
        assert proc.returncode == 0, (args, proc.stderr)
    write = run_as_nobody(
        [str(BIN), "memory", "forget", mid, "--vault", str(root)], home=open_folder
    )
    assert write.returncode == 5
    assert write.stderr.startswith(f"error: cannot write to the vault {root}: this user may not")
    assert write.stderr.count("\n") == 1 and "[vault_read_only]" in write.stderr
    assert sorted(p.name for p in (root / ".agent-mem-vault").iterdir()) == before
