"""The vault keeper: one process watches the vault so that fresh processes need not
``stat`` every note of their namespace, and is never trusted beyond what it saw.

Each test starts a real keeper process (as ``KeeperLink.start`` does) on a real
vault and drives it with real CLI processes or a ``Vault`` in this process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.vault import Handoff, Vault
from agent_mem_vault.vault.folder.files import VaultLock
from agent_mem_vault.vault.index.keeper import BURST, IDLE_ENV
from agent_mem_vault.vault.index.keeper_link import (
    _ENTRY,
    START_FROM,
    SWITCH_ENV,
    KeeperLink,
    keeper_mode,
    keeper_status,
    socket_for,
    stop_keeper,
)
from agent_mem_vault.vault.index.watch import LOCAL_FILESYSTEMS, filesystem_of
from agent_mem_vault.vault.plug import run_keeper
from tests.by_hand import save_in_place, write_handoff
from tests.cli.test_vault_cli import run

from .conftest import NS, eventually, snapshot
from .test_watch import _same_stamp_edit

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the keeper needs Unix sockets")


@pytest.fixture(autouse=True)
def _always_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test vaults are small, where a check by stat is cheaper than a question and
    the keeper is not asked by default (``ASK_FROM``): here it is asked at every
    check, unless a test says otherwise."""
    monkeypatch.setenv(SWITCH_ENV, "always")


def _start(root: Path, idle: float = 600) -> subprocess.Popen[bytes]:
    env = {**os.environ, IDLE_ENV: str(idle)}
    proc = subprocess.Popen([sys.executable, "-c", _ENTRY, str(root)], env=env)
    if not eventually(lambda: keeper_status(root).get("ready") is True):
        proc.kill()
        proc.wait()
        pytest.fail(f"the keeper was not ready: {keeper_status(root)}")
    return proc


def _keeper_processes(root: Path) -> list[int]:
    """Pids of keeper processes for ``root`` (a started keeper exists as soon as the
    call that started it has returned: ``sh`` forks it before it leaves)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"run_keeper" in b" ".join(argv) and str(root).encode() in argv:
            found.append(int(entry.name))
    return found


@pytest.fixture
def keeper(vault: Vault) -> Iterator[subprocess.Popen[bytes]]:
    # The namespace's folder is made first: until a folder made later is watched
    # (a moment), the keeper vouches for nothing.
    (vault.path / NS / "handoffs").mkdir(parents=True)
    proc = _start(vault.path)
    try:
        yield proc
    finally:
        stop_keeper(vault.path)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _abc(vault: Vault) -> Handoff:
    """A pending handoff to codex whose summary is ``abc``."""
    return vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")


def _resummarise(note: Path, summary: str) -> None:
    """Save ``note`` in place (as Obsidian does) with ``abc`` replaced by ``summary``."""
    save_in_place(note, note.read_text().replace("## Summary\nabc", f"## Summary\n{summary}"))


def _tid(i: int) -> str:
    """The ``i``-th of a run of valid TIDs, in order (newer than any the tests make)."""
    digits = "234567abcdefghijklmnopqrstuvwxyz"
    return "3zzzzzzzz" + "".join(digits[(i >> (5 * k)) & 31] for k in (3, 2, 1, 0))


def _answered(root: Path) -> int:
    return int(keeper_status(root)["answered"])


def _peek(root: Path, namespace: str = NS, **env: str) -> dict[str, str] | None:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        out = run(root, "peek", "-a", "codex", "-n", namespace, "--json").stdout
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    found: dict[str, str] | None = json.loads(out)
    return found


def test_a_fresh_process_sees_an_edit_only_the_keeper_could_see(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    h = _abc(vault)
    # Same size, same mtime: no check by stat can see this edit; a watch does.
    _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
    before = _answered(vault.path)
    peeked = _peek(vault.path)
    assert peeked is not None and peeked["summary"] == "xyz"
    assert _answered(vault.path) == before + 1


def _sees_an_edit_without_asking_the_keeper(vault: Vault, summary: str, switch: str) -> None:
    """A fresh process, with the keeper switch set to ``switch``, sees a note's summary
    edited to ``summary`` while the keeper answers no question."""
    h = _abc(vault)
    _resummarise(vault.path / h.path, summary)
    before = _answered(vault.path)
    peeked = _peek(vault.path, **{SWITCH_ENV: switch})
    assert peeked is not None and peeked["summary"] == summary
    assert _answered(vault.path) == before  # nobody asked it


def test_with_the_keeper_off_a_fresh_process_checks_by_stat(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    _sees_an_edit_without_asking_the_keeper(vault, "seen", switch="off")


def test_the_keeper_applies_edits_to_the_index_as_they_happen(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    h = _abc(vault)
    _resummarise(vault.path / h.path, "indexed")
    db = vault.path / ".agent-mem-vault" / "index.sqlite3"

    def indexed() -> bool:
        conn = sqlite3.connect(db)
        try:
            row = conn.execute("SELECT summary FROM handoffs WHERE id=?", (h.id,)).fetchone()
        finally:
            conn.close()
        return row is not None and row[0] == "indexed"

    assert eventually(indexed)


def test_when_the_vault_is_locked_the_keeper_tells_what_to_apply(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    h = _abc(vault)
    lock = VaultLock(vault.path / ".agent-mem-vault" / "lock")
    lock.acquire()
    try:
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
        told = KeeperLink(vault.path).ask()
        assert told is not None and h.path in told.files
    finally:
        lock.release()


def test_a_read_under_the_lock_applies_what_the_keeper_told(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    h = _abc(vault)
    before = _answered(vault.path)
    # Held from the edit to the read: the keeper cannot apply the edit itself, so it
    # names the note, and this process (inside its own lock) reads it again.
    with vault._held(), vault._locked():
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
        got = vault.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.summary == "xyz"
    assert _answered(vault.path) == before + 1


def test_a_new_namespace_made_by_hand_is_seen_through_the_keeper(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    other = "project/made-by-hand"
    write_handoff(vault.path / other / "handoffs", "3zzzzzzzzzzz2", "by hand", namespace=other)
    peeked = _peek(vault.path, other)
    assert peeked is not None and peeked["summary"] == "by hand"
    # The keeper vouches again once the new folder is watched (and applied).
    assert eventually(lambda: keeper_status(vault.path).get("ready") is True)
    note = vault.path / other / "handoffs" / "3zzzzzzzzzzz2.md"
    _same_stamp_edit(note, "## Summary\nby hand", "## Summary\nby pen!")
    peeked = _peek(vault.path, other)
    assert peeked is not None and peeked["summary"] == "by pen!"


def test_a_burst_of_changes_makes_the_keeper_check_everything_again(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    checks = keeper_status(vault.path)["checks"]
    folder = vault.path / NS / "handoffs"
    for i in range(BURST + 100):
        write_handoff(folder, _tid(i), f"burst {i}", namespace=NS)

    # More changes at once than the keeper trusts its watch with (the kernel's queue
    # could have overflowed, and watchfiles would not say): it checks every note.
    # A keeper busy checking may not answer a status question in time (then the
    # status has no "checks"): that is "not yet". Checking 1,100 notes on a loaded
    # machine may take a while.
    def checked_again() -> bool:
        status = keeper_status(vault.path)
        return status.get("checks", checks) > checks and status.get("ready") is True

    assert eventually(checked_again, seconds=120)
    peeked = _peek(vault.path)
    assert peeked is not None and peeked["summary"] == f"burst {BURST + 99}"


def test_a_killed_keeper_is_not_trusted(vault: Vault) -> None:
    h = _abc(vault)
    proc = _start(vault.path)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert json.loads((vault.path / ".agent-mem-vault" / "keeper.lock").read_text())["pid"]
    assert keeper_status(vault.path)["running"] is False
    _resummarise(vault.path / h.path, "after")
    assert KeeperLink(vault.path).ask() is None
    peeked = _peek(vault.path, **{SWITCH_ENV: "on"})
    assert peeked is not None and peeked["summary"] == "after"


def test_a_second_keeper_leaves_at_once(vault: Vault, keeper: subprocess.Popen[bytes]) -> None:
    assert run_keeper(vault.path) == 0  # returns: it did not stay to serve
    assert keeper_status(vault.path)["pid"] == keeper.pid


def test_the_keeper_leaves_when_idle(vault: Vault) -> None:
    proc = _start(vault.path, idle=3)
    assert proc.wait(timeout=20) == 0
    assert keeper_status(vault.path)["running"] is False


def test_the_keeper_leaves_when_its_socket_is_removed(vault: Vault) -> None:
    proc = _start(vault.path)
    socket_for(vault.path).unlink()
    assert proc.wait(timeout=15) == 0


def test_the_keeper_leaves_when_asked(vault: Vault) -> None:
    proc = _start(vault.path)
    assert stop_keeper(vault.path)
    assert proc.wait(timeout=15) == 0


def test_a_call_that_checked_a_big_namespace_starts_a_keeper(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    run(root, "init")
    folder = root / NS / "handoffs"
    for i in range(START_FROM):
        write_handoff(folder, _tid(i), f"note {i}", namespace=NS)
    run(root, "reindex")
    try:
        assert _peek(root, **{SWITCH_ENV: "off"}) is not None
        assert _keeper_processes(root) == []  # switched off: none started
        assert _peek(root) is not None
        assert _keeper_processes(root)  # started before the call returned
        # One keeper holds the vault. On a loaded machine a second one, started at
        # the same moment, has been seen: it finds the keeper lock held and leaves.
        assert eventually(lambda: len(_keeper_processes(root)) == 1)
        assert eventually(lambda: keeper_status(root).get("ready") is True)
        before = _answered(root)
        assert _peek(root) is not None
        assert _answered(root) == before + 1
    finally:
        stop_keeper(root)


def test_a_small_namespace_starts_no_keeper(vault: Vault) -> None:
    _abc(vault)
    assert _peek(vault.path) is not None
    assert _keeper_processes(vault.path) == []
    assert not (vault.path / ".agent-mem-vault" / "keeper.lock").exists()


def test_a_long_lived_vault_follows_an_index_rebuilt_by_another_process(vault: Vault) -> None:
    vault.create_handoff(to="codex", summary="one", context="c", namespace=NS, from_="a")
    run(vault.path, "reindex")  # another process deletes the index file and builds a new one
    h = vault.create_handoff(to="codex", summary="two", context="c", namespace=NS, from_="a")
    conn = sqlite3.connect(vault.path / ".agent-mem-vault" / "index.sqlite3")
    try:
        row = conn.execute("SELECT summary FROM handoffs WHERE id=?", (h.id,)).fetchone()
    finally:
        conn.close()
    assert row == ("two",)  # written to the index every process reads, not the deleted one


def test_the_keeper_command_shows_starts_and_stops_it(vault: Vault) -> None:
    out = json.loads(run(vault.path, "keeper", "--json").stdout)
    assert out["running"] is False and out["enabled"] is True
    started = json.loads(run(vault.path, "keeper", "--start", "--json").stdout)
    try:
        assert started["running"] is True and started["ready"] is True
        assert (
            started["pid"]
            == json.loads((vault.path / ".agent-mem-vault" / "keeper.lock").read_text())["pid"]
        )
        doctor = json.loads(run(vault.path, "doctor", "--json", check=False).stdout)
        assert doctor["keeper"]["running"] is True
        text = run(vault.path, "keeper").stdout
        assert f"running (pid {started['pid']}), ready" in text
    finally:
        stopped = run(vault.path, "keeper", "--stop").stdout
    assert "not running" in stopped
    assert keeper_status(vault.path)["running"] is False


def test_the_keeper_command_names_a_missing_vault(tmp_path: Path) -> None:
    proc = run(tmp_path / "nowhere", "keeper", "--start", check=False)
    assert proc.returncode != 0
    assert "no vault at" in proc.stderr and "agent-mem-vault init" in proc.stderr
    assert not (tmp_path / "nowhere").exists()


def test_a_copied_vault_does_not_trust_the_originals_keeper(
    vault: Vault, keeper: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    h = _abc(vault)
    copy = tmp_path / "copy"
    shutil.copytree(vault.path, copy)  # keeper.lock too: it names the original's keeper
    assert json.loads((copy / ".agent-mem-vault" / "keeper.lock").read_text())["pid"]
    note = copy / h.path
    _same_stamp_edit(note, "## Summary\nabc", "## Summary\nxyz")
    assert KeeperLink(copy).ask() is None
    assert KeeperLink(vault.path).ask() is not None


MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /mnt/c rw,noatime - 9p drvfs rw,dirsync,aname=drvfs;path=C:\\
31 22 0:40 / /home/me/remote rw,nosuid - fuse.sshfs me@box:/vault rw
32 22 0:41 / /srv/nfs rw - nfs4 box:/export rw
33 22 0:42 / /home/me/My\\040Vaults rw - btrfs /dev/sdb1 rw
"""


@pytest.mark.parametrize(
    ("path", "fstype", "watched"),
    [
        ("/home/me/vault", "ext4", True),
        ("/mnt/c/Users/me/vault", "9p", False),
        ("/home/me/remote/notes", "fuse.sshfs", False),
        ("/srv/nfs/vault", "nfs4", False),
        ("/home/me/My Vaults/work", "btrfs", True),
    ],
)
def test_a_keeper_is_only_for_vaults_on_a_local_filesystem(
    path: str, fstype: str, watched: bool
) -> None:
    # Edits made from another machine (Obsidian on Windows into WSL's /mnt/c, a
    # network share) send no event: there every call checks by stat.
    assert filesystem_of(path, MOUNTINFO) == fstype
    assert (fstype in LOCAL_FILESYSTEMS) is watched


def test_a_keeper_of_another_version_is_not_trusted_and_asked_to_leave(
    vault: Vault, keeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent_mem_vault.vault.index.keeper_link as keeper_module

    assert KeeperLink(vault.path).ask() is not None
    monkeypatch.setattr(keeper_module, "code_key", lambda: "9.9.9/9999_future")
    assert KeeperLink(vault.path).ask() is None
    assert keeper.wait(timeout=15) == 0


def test_what_is_not_a_note_file_is_not_read_through_the_keeper(
    vault: Vault, keeper: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    # A watch names paths without saying what they are: a FIFO must not block the
    # keeper, and a link to a file outside the vault is not a note (the scan skips both).
    folder = vault.path / NS / "handoffs"
    os.mkfifo(folder / "pipe.md")
    outside = write_handoff(tmp_path / "elsewhere", "3zzzzzzzzzzz3", "outside", namespace=NS)
    (folder / "3zzzzzzzzzzz3.md").symlink_to(outside)
    h = vault.create_handoff(to="codex", summary="inside", context="c", namespace=NS, from_="a")
    peeked = _peek(vault.path)
    assert peeked is not None and peeked["id"] == h.id
    assert keeper_status(vault.path).get("ready") is True  # not stuck on the FIFO
    assert [x.id for x in vault.list_handoffs(namespace=NS, status="all")] == [h.id]


def test_the_keeper_stays_ready_across_a_new_namespace(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    """Its watch is set up again for the new folders without a gap: nothing is checked
    again, and an edit made in an old folder meanwhile (one no ``stat`` can see) is
    not lost."""
    h = _abc(vault)
    assert eventually(lambda: keeper_status(vault.path).get("ready") is True)
    checks = keeper_status(vault.path)["checks"]
    other = "project/made-by-hand"
    write_handoff(vault.path / other / "handoffs", "3zzzzzzzzzzz2", "by hand", namespace=other)
    _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
    assert eventually(lambda: keeper_status(vault.path).get("ready") is True)
    before = _answered(vault.path)
    peeked = _peek(vault.path, other)
    assert peeked is not None and peeked["summary"] == "by hand"
    peeked = _peek(vault.path)
    assert peeked is not None and peeked["summary"] == "xyz"
    assert _answered(vault.path) == before + 2  # both vouched for by the keeper
    assert keeper_status(vault.path)["checks"] == checks


def test_a_namespace_moved_by_hand_is_seen_and_watched_through_the_keeper(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    h = _abc(vault)
    assert _peek(vault.path) is not None
    checks = keeper_status(vault.path)["checks"]
    moved = "project/moved"
    (vault.path / NS).rename(vault.path / moved)
    assert eventually(lambda: keeper_status(vault.path).get("ready") is True)
    note = f"{moved}/handoffs/{h.id}.md"
    peeked = _peek(vault.path)  # the namespace is the note's, wherever it lies
    assert peeked is not None and peeked["path"] == note
    _same_stamp_edit(vault.path / note, "## Summary\nabc", "## Summary\nxyz")
    before = _answered(vault.path)
    peeked = _peek(vault.path)
    assert peeked is not None and peeked["summary"] == "xyz"
    assert _answered(vault.path) == before + 1
    assert keeper_status(vault.path)["checks"] == checks


def test_reading_a_named_path_skips_what_is_not_a_regular_file(tmp_path: Path) -> None:
    from agent_mem_vault.vault.folder.records import read_file

    (tmp_path / "folder.md").mkdir()
    os.mkfifo(tmp_path / "fifo.md")
    (tmp_path / "real.md").write_text("x")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    assert read_file(tmp_path, "folder.md") is None
    assert read_file(tmp_path, "fifo.md") is None  # and does not block
    assert read_file(tmp_path, "link.md") is None
    assert read_file(tmp_path, "gone.md") is None
    found = read_file(tmp_path, "real.md")
    assert found is not None and found[1] == b"x"


def test_a_namespace_smaller_than_a_question_is_checked_by_stat(
    vault: Vault, keeper: subprocess.Popen[bytes]
) -> None:
    """By default a fresh process asks the keeper only where that is cheaper than
    checking by stat: not for a namespace of a few notes. It sees an edit all the same."""
    _sees_an_edit_without_asking_the_keeper(vault, "longer than before", switch="on")


def test_a_namespace_of_many_notes_is_vouched_for_by_the_keeper(
    vault: Vault, keeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """From ``ASK_FROM`` stat calls (folders and the namespace's notes) the keeper is
    asked, and it sees what a stat cannot."""
    import agent_mem_vault.vault.index.upkeep as upkeep

    monkeypatch.setenv(SWITCH_ENV, "on")
    h = _abc(vault)
    for i in range(5):
        write_handoff(vault.path / NS / "handoffs", _tid(i), f"more {i}", namespace=NS)
    Vault(vault.path).list_handoffs(namespace=NS)  # indexed: the index counts the notes
    folders = len(Vault(vault.path)._upkeep.handle().dirs())
    monkeypatch.setattr(upkeep, "ASK_FROM", folders + 6)  # the folders and all six notes
    _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
    before = _answered(vault.path)
    fresh = Vault(vault.path)
    assert fresh.get_handoff(h.id).summary == "abc"  # a read by id checks folders only
    fresh.list_handoffs(namespace=NS)
    assert _answered(vault.path) == before + 1
    assert fresh.get_handoff(h.id).summary == "xyz"
    monkeypatch.setattr(upkeep, "ASK_FROM", folders + 7)  # one more than there is
    _same_stamp_edit(vault.path / h.path, "## Summary\nxyz", "## Summary\nabc")
    other = Vault(vault.path)
    other.list_handoffs(namespace=NS)
    assert _answered(vault.path) == before + 1  # not asked: checked by stat


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("", "on"),
        ("1", "on"),
        (" On ", "on"),
        ("yes", "on"),
        ("true", "on"),
        ("0", "off"),
        ("OFF", "off"),
        ("no", "off"),
        ("false", "off"),
        ("always", "always"),
        (" Always\n", "always"),
    ],
)
def test_the_keeper_switch_is_read_in_one_place(value: str, mode: str) -> None:
    assert keeper_mode({SWITCH_ENV: value}) == mode
    assert keeper_mode({}) == "on"


@pytest.mark.parametrize("value", ["alwyas", "of", "never", "2"])
def test_a_bad_keeper_switch_is_a_clear_error_when_the_vault_opens(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """A typo is neither quietly on nor quietly off: opening a vault says what is wrong,
    and nothing is written or started."""
    before = snapshot(vault.path)
    monkeypatch.setenv(SWITCH_ENV, value)
    with pytest.raises(InvalidInputError) as caught:
        Vault(vault.path)
    assert caught.value.code == "invalid_setting"
    assert caught.value.details == {"field": SWITCH_ENV}
    assert f"not {value!r}" in str(caught.value) and "always" in str(caught.value)
    assert snapshot(vault.path) == before
    result = run(vault.path, "doctor", check=False)
    assert result.returncode == 2
    assert f"{SWITCH_ENV} must be off" in result.stderr and "[invalid_setting]" in result.stderr
    assert snapshot(vault.path) == before
