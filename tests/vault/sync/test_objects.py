"""Objects written and read in this process are the objects git writes and reads, and
git is asked wherever the repository is not plain."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from agent_mem_vault.vault.sync import objects as objects_module
from agent_mem_vault.vault.sync.gitcmd import Git
from agent_mem_vault.vault.sync.trees import edited_tree


def _git(tmp_path: Path, sha: str = "sha1", *config: str) -> Git:
    git_dir = tmp_path / f"{sha}.git"
    subprocess.run(
        ["git", "init", "-q", "--bare", f"--object-format={sha}", str(git_dir)], check=True
    )
    for item in config:
        name, _, value = item.partition("=")
        subprocess.run(["git", "--git-dir", str(git_dir), "config", name, value], check=True)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return Git(git_dir, work, tmp_path / f"{sha}.index")


def _fsck(git: Git) -> None:
    result = git.run("fsck", "--no-dangling", "--strict", check=False)
    assert result.status == 0, result.err


def _pretty(git: Git, oid: str) -> bytes:
    return git.run("cat-file", "-p", oid).out


@pytest.mark.parametrize("sha", ["sha1", "sha256"])
def test_objects_written_here_are_the_objects_git_writes(tmp_path: Path, sha: str) -> None:
    git = _git(tmp_path, sha)
    assert git.objects.plain
    digits = 40 if sha == "sha1" else 64
    text = "ü and a tab\there\n".encode() * 500
    blob = git.objects.write(b"blob", text, digits)
    assert blob == git.run("hash-object", "--stdin", input=text).out.decode().strip()
    assert _pretty(git, blob) == text
    tree = edited_tree(git, git.text("hash-object", "-t", "tree", "/dev/null"), {"a/b.md": blob})
    assert git.text("ls-tree", "-r", "--name-only", tree) == "a/b.md"
    # Written once: a second write finds it and leaves the read-only file as it is.
    path = git.git_dir / "objects" / blob[:2] / blob[2:]
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert git.objects.write(b"blob", text, digits) == blob
    assert not [p for p in path.parent.iterdir() if p.name.startswith("tmp_obj_")]
    _fsck(git)


@pytest.mark.parametrize(
    "message", ["read 3n43znrr7567c", "two lines\n\nand a body\n", "ü: not ascii"]
)
def test_a_commit_made_here_is_the_commit_git_makes_in_the_same_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str
) -> None:
    git = _git(tmp_path)
    empty = git.text("hash-object", "-w", "-t", "tree", "/dev/null")
    first = git.text("commit-tree", "--no-gpg-sign", empty, "-m", "first")
    second = git.text("commit-tree", "--no-gpg-sign", empty, "-m", "second")
    now = int(time.time())
    monkeypatch.setattr(objects_module.time, "time", lambda: float(now))
    offset = time.localtime(now).tm_gmtoff // 60
    zone = f"{'-' if offset < 0 else '+'}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    person = {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.org"}
    person |= {"GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.org"}
    dated = {"GIT_AUTHOR_DATE": f"{now} {zone}", "GIT_COMMITTER_DATE": f"{now} {zone}"}
    for parents in ([], [first], [first, second], [first, first]):
        made = git.commit_tree(empty, parents, message, person)
        links = [a for p in dict.fromkeys(parents) for a in ("-p", p)]
        by_git = git.text(
            "commit-tree", "--no-gpg-sign", empty, *links, "-m", message, env=person | dated
        )
        assert made == by_git, _pretty(git, made).decode()
    _fsck(git)


def test_an_identity_git_would_clean_up_is_left_to_git(tmp_path: Path) -> None:
    git = _git(tmp_path)
    empty = git.text("hash-object", "-w", "-t", "tree", "/dev/null")
    odd = {"GIT_AUTHOR_NAME": " Bob. ", "GIT_AUTHOR_EMAIL": "<bob@example.org>"}
    odd |= {"GIT_COMMITTER_NAME": " Bob. ", "GIT_COMMITTER_EMAIL": "<bob@example.org>"}
    made = git.commit_tree(empty, [], "x", odd)
    author = git.text("log", "-1", "--format=%an <%ae>", made)
    assert author == "Bob <bob@example.org>"  # as git cleaned it, not as typed


def test_a_tree_git_has_packed_is_read_through_git(tmp_path: Path) -> None:
    git = _git(tmp_path)
    work = git.env["GIT_WORK_TREE"]
    paths = ["ns/handoffs/a.md", "ns/handoffs/b.md", "ns/memories/c.md"]
    for p in paths:
        (Path(work) / p).parent.mkdir(parents=True, exist_ok=True)
        (Path(work) / p).write_text(p)
    git.run(
        "update-index", "--add", "-z", "--stdin", input="".join(f"{p}\0" for p in paths).encode()
    )
    root = git.text("write-tree")
    git.run("update-ref", "refs/heads/main", git.commit_tree(root, [], "notes"))
    git.run("repack", "-a", "-d", "-q")
    git.run("prune-packed")
    assert git.objects.read(root) is None  # packed: not loose any more
    blob = git.objects.write(b"blob", b"new\n", 40)
    made = edited_tree(git, root, {"ns/handoffs/b.md": blob})
    listed = git.run("ls-tree", "-r", made).out.decode()
    assert f"{blob}\tns/handoffs/b.md" in listed and "ns/memories/c.md" in listed
    _fsck(git)


@pytest.mark.parametrize(
    "setting", ["core.sharedRepository=group", "i18n.commitEncoding=ISO-8859-1"]
)
def test_a_repository_that_is_not_plain_is_written_by_git(tmp_path: Path, setting: str) -> None:
    git = _git(tmp_path, "sha1", setting)
    assert not git.objects.plain
    blob = git.run("hash-object", "-w", "--stdin", input=b"x\n").out.decode().strip()
    empty = git.text("hash-object", "-t", "tree", "/dev/null")
    made = edited_tree(git, empty, {"a.md": blob})
    assert git.text("ls-tree", "--name-only", made) == "a.md"
    if "shared" in setting:  # git wrote it, as the group may read it
        tree_file = git.git_dir / "objects" / made[:2] / made[2:]
        assert tree_file.stat().st_mode & stat.S_IRGRP


def test_an_attributes_file_on_a_notes_way_leaves_its_blob_to_git(tmp_path: Path) -> None:
    git = _git(tmp_path)
    work = Path(git.env["GIT_WORK_TREE"])
    (work / "ns" / "handoffs").mkdir(parents=True)
    assert not git.objects.has_attributes(work, ["ns/handoffs/a.md"])
    (work / "ns" / ".gitattributes").write_text("*.md text\n")
    assert git.objects.has_attributes(work, ["ns/handoffs/a.md"])
    assert not git.objects.has_attributes(work, ["other/handoffs/a.md"])
    (git.git_dir / "info").mkdir(exist_ok=True)
    (git.git_dir / "info" / "attributes").write_text("*.md text\n")
    assert git.objects.has_attributes(work, ["other/handoffs/a.md"])


def test_a_users_own_attributes_file_makes_the_repository_not_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "git").mkdir(parents=True)
    assert _git(tmp_path / "before").objects.plain
    (tmp_path / "xdg" / "git" / "attributes").write_text("*.md text\n")
    assert not _git(tmp_path / "after").objects.plain


@pytest.mark.parametrize("sha", ["sha1", "sha256"])
def test_an_edited_tree_says_what_each_path_held_as_diff_tree_does(
    tmp_path: Path, sha: str
) -> None:
    git = _git(tmp_path, sha)
    work = Path(git.env["GIT_WORK_TREE"])
    paths = ["ns/handoffs/a.md", "ns/handoffs/b.md", "ns/handoffs/ab.md", "x.md"]
    for p in paths:
        (work / p).parent.mkdir(parents=True, exist_ok=True)
        (work / p).write_text(p)
    git.run(
        "update-index", "--add", "-z", "--stdin", input="".join(f"{p}\0" for p in paths).encode()
    )
    root = git.text("write-tree")
    digits = len(root)
    new = {
        "ns/handoffs/b.md": git.objects.write(b"blob", b"changed\n", digits),
        "ns/handoffs/new.md": git.objects.write(b"blob", b"new\n", digits),
        "deep/er/n.md": git.objects.write(b"blob", b"deep\n", digits),
        "x.md": git.objects.write(b"blob", b"x.md", digits),  # the same blob as before
    }
    before: dict[str, str | None] = {}
    made = edited_tree(git, root, new, before=before)
    raw = git.run("diff-tree", "-r", "-z", root, made).out.decode().split("\0")
    said = {raw[i + 1]: raw[i].split(" ")[2] for i in range(0, len(raw) - 1, 2)}
    zero = "0" * digits
    assert {p: (b or zero) for p, b in before.items() if new[p] != b} == said
    assert before["x.md"] == new["x.md"]
    assert os.path.exists(git.git_dir / "objects" / made[:2] / made[2:])


@pytest.mark.parametrize(("setting", "flushes"), [(None, 0), ("core.fsync=loose-object", 1)])
def test_an_object_is_flushed_to_disk_where_git_would_flush_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None, flushes: int
) -> None:
    git = _git(tmp_path, "sha1", *([setting] if setting else []))
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(objects_module.os, "fsync", lambda fd: calls.append(fd) or real(fd))
    git.objects.write(b"blob", b"durable\n", 40)
    assert len(calls) == flushes
