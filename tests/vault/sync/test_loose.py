"""What a sync works out from loose objects is what git answers, and git is asked
wherever an object is not loose or a tree is too big to read here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent_mem_vault.vault.sync import loose
from agent_mem_vault.vault.sync.gitcmd import Git


class _Repo:
    """A work tree committed with git's own commands, so every object is git's."""

    def __init__(self, tmp_path: Path, sha: str = "sha1") -> None:
        self.work = tmp_path / "work"
        self.work.mkdir()
        subprocess.run(["git", "init", "-q", f"--object-format={sha}", str(self.work)], check=True)
        self.git = Git(self.work / ".git", self.work, self.work / ".git" / "index")
        self.parents: list[str] = []

    def commit(self, files: dict[str, str | None], *, link: str | None = None) -> str:
        """Write ``files`` (None: removed; a folder path removes the folder), commit."""
        for path, text in files.items():
            target = self.work / path
            if text is None:
                subprocess.run(["rm", "-rf", str(target)], check=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir():
                subprocess.run(["rm", "-rf", str(target)], check=True)
            target.write_text(text)
        if link is not None:
            (self.work / link).unlink(missing_ok=True)
            (self.work / link).symlink_to("elsewhere")
        self.plain_git("add", "-A", ".")
        tree = self.plain_git("write-tree")
        parents = [a for p in self.parents for a in ("-p", p)]
        commit = self.plain_git("commit-tree", tree, *parents, "-m", "c")
        self.parents = [commit]
        return commit

    def plain_git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=T", "-c", "user.email=t@example.org", *args],
            cwd=self.work,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def git_diff(self, old: str, new: str) -> list[loose.Change]:
        raw = self.git.run("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new)
        parts = raw.out.decode().split("\0")
        out = []
        for i in range(0, len(parts) - 1, 2):
            f = parts[i].lstrip(":").split(" ")
            out.append((parts[i + 1], f[0], f[1], f[2], f[3]))
        return out


@pytest.mark.parametrize("sha", ["sha1", "sha256"])
def test_a_diff_worked_out_here_is_the_diff_git_makes(tmp_path: Path, sha: str) -> None:
    repo = _Repo(tmp_path, sha)
    steps = [
        {"ns/handoffs/a.md": "a", "ns/handoffs/b.md": "b", "ns/_brief.md": "x", "top.md": "t"},
        {"ns/handoffs/a.md": "a2", "ns/memories/m.md": "m"},  # changed, and a new folder
        {"ns/handoffs/b.md": None, "ns/memories": None},  # a file and a whole folder go
        {"top.md": None, "top.md/inside.md": "now a folder"},  # a file becomes a folder
        {"top.md": "a file again", "ns/handoffs/a.md-x.md": "sorts before a.md/"},
        {"ü/ñ.md": "not ascii"},
    ]
    commits = [repo.commit(files) for files in steps]
    (repo.work / "ns" / "handoffs" / "a.md").chmod(0o755)
    commits.append(repo.commit({}, link="ns/link.md"))  # a mode changed, a symbolic link
    empty = loose.tree_of(repo.git, repo.git.text("hash-object", "-t", "tree", "/dev/null"))
    assert empty is not None
    for old in [empty, *commits]:
        for new in commits:
            worked = loose.diff(repo.git, old, new)
            assert worked is not None
            assert worked or old == new
            assert sorted(worked) == sorted(repo.git_diff(old, new)), (old, new)


def test_a_diff_is_left_to_git_where_a_tree_is_packed_or_big(tmp_path: Path) -> None:
    repo = _Repo(tmp_path)
    first = repo.commit({"a/one.md": "1"})
    second = repo.commit({"a/one.md": "2"})
    assert loose.diff(repo.git, first, second) is not None
    big = repo.commit({f"big/{i:05d}-{'x' * 40}.md": str(i) for i in range(1_200)})
    assert loose.diff(repo.git, second, big) is None  # 80 KB: git reads it quicker
    repo.git.run("gc", "--quiet", "--prune=now")
    assert loose.diff(repo.git, first, second) is None  # packed: only git reads it
    assert loose.tree_of(repo.git, first) is None
    assert loose.entries(repo.git, first, ["a/one.md"]) is None
    assert loose.objects(repo.git, [first], b"commit") == ({}, [first])


def test_entries_and_objects_worked_out_here_are_what_git_says(tmp_path: Path) -> None:
    repo = _Repo(tmp_path)
    commit = repo.commit({"ns/handoffs/a.md": "alpha", "ns/x/y.md": "deep"}, link="ns/l.md")
    tree = loose.tree_of(repo.git, commit)
    assert tree is not None
    paths = ["ns/handoffs/a.md", "ns/x", "ns/l.md", "ns/none.md", "gone/z.md", "ns/x/y.md"]
    found = loose.entries(repo.git, tree, paths)
    listed = repo.git.run("ls-tree", "-z", tree, "--", *paths).out.decode().split("\0")
    by_git = {}
    for item in filter(None, listed):
        meta, _, path = item.partition("\t")
        mode, kind, oid = meta.split(" ")
        if kind != "tree":
            by_git[path] = (mode, oid)
    assert found == by_git
    assert loose.entries(repo.git, commit, ["ns/x/y.md"]) == {"ns/x/y.md": by_git["ns/x/y.md"]}
    blob = by_git["ns/handoffs/a.md"][1]
    names = [blob, f"{tree}:ns/handoffs/a.md", f"{tree}:ns/none.md", f"{commit}:ns/x/y.md"]
    got, left = loose.objects(repo.git, names, b"blob")
    assert got == {
        blob: b"alpha",
        f"{tree}:ns/handoffs/a.md": b"alpha",
        f"{commit}:ns/x/y.md": b"deep",
    }
    assert left == []  # a path the tree lacks is in neither, as git leaves it out
    got, left = loose.objects(repo.git, [commit, blob], b"commit")
    assert list(got) == [commit] and got[commit].startswith(b"tree ")
    assert left == []


def _merge_base_says(git: Git, older: str, newer: str) -> bool:
    return git.run("merge-base", "--is-ancestor", older, newer, check=False).status == 0


def test_ancestry_worked_out_here_is_what_git_says(tmp_path: Path) -> None:
    repo = _Repo(tmp_path)
    line = [repo.commit({"n.md": str(i)}) for i in range(5)]
    repo.parents = [line[1]]
    side = [repo.commit({"s.md": str(i)}) for i in range(3)]
    repo.parents = [line[-1], side[-1]]
    merge = repo.commit({"m.md": "merge"})
    repo.parents = []
    orphan = repo.commit({"o.md": "unrelated"})
    every = [*line, *side, merge, orphan]
    for older in every:
        for newer in every:
            answer = loose.ancestry(repo.git, older, newer, {})
            assert answer is not None, (older, newer)
            assert answer == _merge_base_says(repo.git, older, newer), (older, newer)
    # Parents this process knows are used as they are, unread.
    assert loose.ancestry(repo.git, orphan, line[0], {line[0]: [orphan]}) is True


def test_ancestry_is_left_to_git_past_the_walk_or_a_packed_commit(tmp_path: Path) -> None:
    repo = _Repo(tmp_path)
    first = repo.commit({"n.md": "0"})
    later = [repo.commit({"n.md": str(i)}) for i in range(1, loose.MAX_WALK + 3)]
    assert loose.ancestry(repo.git, later[-2], later[-1], {}) is True  # one step
    assert loose.ancestry(repo.git, later[-1], later[-2], {}) is False  # the other way
    assert loose.ancestry(repo.git, first, later[-1], {}) is None  # too far to walk
    repo.parents = []
    unrelated = repo.commit({"o.md": "o"})
    assert loose.ancestry(repo.git, unrelated, later[-1], {}) is None  # "no", too far
    repo.git.run("gc", "--quiet", "--prune=now")
    assert loose.ancestry(repo.git, later[-2], later[-1], {}) is None


def test_a_merge_base_worked_out_here_is_the_one_git_finds(tmp_path: Path) -> None:
    repo = _Repo(tmp_path)
    fetched = repo.commit({"n.md": "the remote"})
    mine = repo.commit({"m.md": "sent from here"})  # local, then sent: its entry came back
    later = repo.commit({"m.md": "written here since"})
    repo.parents = [fetched, mine]
    folded = repo.commit({"r.md": "another machine's"})  # fetched again: the fold
    repo.parents = [fetched]
    elsewhere = repo.commit({"e.md": "a side"})
    repo.parents = [fetched, elsewhere]
    both_sides = repo.commit({"b.md": "a merge of two sides"})
    for ours, theirs in [(later, folded), (mine, folded), (later, fetched), (fetched, later)]:
        by_git = repo.plain_git("merge-base", ours, theirs)
        assert loose.merge_base(repo.git, ours, theirs, {}) == by_git, (ours, theirs)
    # A side this machine never had: the walk would have to go further, so git says.
    assert loose.merge_base(repo.git, later, both_sides, {}) is None
    # ``theirs`` before ``ours``, further back than a walk goes: git's answer, or none.
    repo.parents = [fetched]
    theirs_far = repo.commit({"f.md": "theirs"})
    line = [repo.commit({"f.md": str(n)}) for n in range(loose.MAX_WALK + 4)]
    repo.parents = [line[-1], fetched]
    ours_far = repo.commit({"f.md": "a merge"})
    assert repo.plain_git("merge-base", ours_far, theirs_far) == theirs_far
    assert loose.merge_base(repo.git, ours_far, theirs_far, {}) in (None, theirs_far)
    repo.parents = [mine]
    criss = repo.commit({"c.md": "1"})
    repo.parents = [elsewhere]
    cross = repo.commit({"c.md": "2"})
    repo.parents = [criss, cross]
    theirs = repo.commit({"c.md": "3"})
    repo.parents = [criss, cross]
    ours = repo.commit({"c.md": "4"})
    assert loose.merge_base(repo.git, ours, theirs, {}) is None  # two best: git chooses


def test_a_damaged_loose_object_is_left_to_git_which_says_so(tmp_path: Path) -> None:
    repo = _Repo(tmp_path)
    first = repo.commit({"a.md": "1"})
    second = repo.commit({"a.md": "2"})
    path = repo.git.git_dir / "objects" / second[:2] / second[2:]
    path.chmod(0o644)
    path.write_bytes(b"not zlib at all")
    assert loose.ancestry(repo.git, first, second, {}) is None
    assert loose.diff(repo.git, first, second) is None
    assert repo.git.run("cat-file", "-p", second, check=False).status != 0


def test_a_commit_read_here_is_what_git_log_says_signed_or_in_another_encoding(
    tmp_path: Path,
) -> None:
    repo = _Repo(tmp_path)
    first = repo.commit({"a.md": "1"})
    tree = repo.plain_git("write-tree")
    person = "T <t@example.org> 1700000000 +0000"
    signed = (
        f"tree {tree}\nparent {first}\nauthor {person}\ncommitter {person}\n"
        "gpgsig -----BEGIN SSH SIGNATURE-----\n U1NIU0lH\n \n -----END SSH SIGNATURE-----\n"
        '\nread 3n43znrr7567c\n\n{"seq": 2}\n'
    )
    oid = repo.git.run("hash-object", "-w", "-t", "commit", "--stdin", input=signed.encode())
    signed_id = oid.out.decode().strip()
    read = loose.commit(repo.git, signed_id)
    assert read is not None
    by_git = repo.plain_git("log", "-1", "--format=%T %P", signed_id).split()
    assert [read.tree, *read.parents] == by_git
    assert read.message == repo.git.run("log", "-1", "--format=%B", signed_id).out.decode()[:-1]
    latin = f"tree {tree}\nauthor {person}\ncommitter {person}\nencoding ISO-8859-1\n\nmsg\n"
    made = repo.git.run("hash-object", "-w", "-t", "commit", "--stdin", input=latin.encode())
    other = made.out.decode().strip()
    assert loose.commit(repo.git, other) is None  # git re-encodes it: git reads it
