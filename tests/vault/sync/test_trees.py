"""A commit's tree made along the changed paths only is the tree git's index makes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent_mem_vault.vault.sync.gitcmd import Git
from agent_mem_vault.vault.sync.trees import edited_tree

NOTES = {
    "project/a/handoffs/one.md": "one\n",
    "project/a/handoffs/two.md": "two\n",
    "project/a/memories/m.md": "m\n",
    "project/a-b/handoffs/x.md": "x\n",  # sorts between "a" and "a/" as git sorts it
    "project/a.b/handoffs/y.md": "y\n",
    "_brief.md": "brief\n",
    "odd name ü\tx.md": "odd\n",
}


def _repo(tmp_path: Path, sha: str) -> tuple[Git, Path, str]:
    work = tmp_path / f"work-{sha}"
    git_dir = tmp_path / f"{sha}.git"
    subprocess.run(
        ["git", "init", "-q", "--bare", f"--object-format={sha}", str(git_dir)], check=True
    )
    for path, text in NOTES.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git = Git(git_dir, work, tmp_path / f"{sha}.index")
    git.run(
        "update-index", "--add", "-z", "--stdin", input="".join(f"{p}\0" for p in NOTES).encode()
    )
    return git, work, git.text("write-tree")


@pytest.mark.parametrize("sha", ["sha1", "sha256"])
@pytest.mark.parametrize(
    "changed",
    [
        ["project/a/handoffs/two.md"],  # an entry replaced where it stands
        ["project/a/handoffs/three.md"],  # a new entry
        ["project/a/handoffs/one.md", "project/a-b/handoffs/x.md", "_brief.md"],
        ["project/new/handoffs/z.md"],  # folders the tree does not have yet
        ["odd name ü\tx.md"],
        ["project/a/handoffs/one.md", "project/a/handoffs/0.md", "project/a/memories/m2.md"],
    ],
)
def test_a_tree_edited_along_its_paths_is_the_tree_the_index_makes(
    tmp_path: Path, sha: str, changed: list[str]
) -> None:
    git, work, root = _repo(tmp_path, sha)
    blobs = {}
    for path in changed:
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(f"changed {path}\n")
        blobs[path] = git.text("hash-object", "-w", "--", str(work / path))
    made = edited_tree(git, root, blobs)
    git.run(
        "update-index", "--add", "-z", "--stdin", input="".join(f"{p}\0" for p in changed).encode()
    )
    assert made == git.text("write-tree")
    # Every tree it made is in the repository, whole, and names every note.
    listed = git.run("ls-tree", "-r", "-z", "--name-only", made).out.decode().split("\0")
    assert set(listed) - {""} == set(NOTES) | set(changed)
    assert git.run("fsck", "--no-dangling", "--strict", check=False).status == 0


def test_a_tree_only_worked_out_is_the_one_written_and_writes_nothing(tmp_path: Path) -> None:
    git, _work, root = _repo(tmp_path, "sha1")
    blob = git.run("hash-object", "-w", "--stdin", input=b"new text\n").out.decode().strip()
    change = {"project/new/handoffs/z.md": blob}
    worked_out = edited_tree(git, root, change, write=False)
    assert git.run("cat-file", "-e", worked_out, check=False).status != 0  # not written
    assert edited_tree(git, root, change) == worked_out
    assert git.run("cat-file", "-e", worked_out, check=False).status == 0
