"""The namespace of a repository, found from the working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.integrations import discover_namespace, find_repo_root

from .conftest import Run


def test_namespace_is_the_git_repositorys_folder_name(repo: Path) -> None:
    assert discover_namespace(repo) == "project/harbor-api"


def test_namespace_is_found_from_a_subfolder(repo: Path) -> None:
    sub = repo / "app" / "jobs"
    sub.mkdir(parents=True)
    assert discover_namespace(sub) == "project/harbor-api"
    assert find_repo_root(sub) == repo.resolve()


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:acme/harbor-api.git",
        "https://github.com/acme/harbor-api.git",
        "https://github.com/acme/harbor-api",
        "ssh://git@host:2222/acme/harbor-api.git/",
    ],
)
def test_namespace_follows_the_origin_remote_so_two_clones_agree(tmp_path: Path, url: str) -> None:
    clone = tmp_path / "checkout-2"
    (clone / ".git").mkdir(parents=True)
    (clone / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "upstream"]\n\turl = git@x:other/nope.git\n'
        f'[remote "origin"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    )
    assert discover_namespace(clone) == "project/harbor-api"


def test_a_worktree_reads_the_main_repositorys_config(tmp_path: Path) -> None:
    main = tmp_path / "main"
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / ".git" / "config").write_text('[remote "origin"]\n\turl = git@h:acme/harbor-api.git\n')
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    wt = tmp_path / "feature-x"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    assert discover_namespace(wt) == "project/harbor-api"


def test_a_config_file_in_the_repository_names_the_namespace(repo: Path) -> None:
    (repo / ".agent-mem-vault.toml").write_text('namespace = "client/acme/harbor"\n')
    sub = repo / "src"
    sub.mkdir()
    assert discover_namespace(sub) == "client/acme/harbor"


def test_a_config_file_without_namespace_is_a_clear_error(repo: Path) -> None:
    (repo / ".agent-mem-vault.toml").write_text("agent = 'x'\n")
    with pytest.raises(InvalidInputError, match=r"has no namespace: add a line such as"):
        discover_namespace(repo)


def test_a_config_file_that_is_not_toml_is_a_clear_error(repo: Path) -> None:
    (repo / ".agent-mem-vault.toml").write_text("namespace = \n")
    with pytest.raises(InvalidInputError, match=r"is not valid TOML"):
        discover_namespace(repo)


def test_outside_any_repository_there_is_no_default(tmp_path: Path) -> None:
    lone = tmp_path / "lone"
    lone.mkdir()
    assert discover_namespace(lone) is None


def test_an_odd_folder_name_becomes_a_safe_segment(tmp_path: Path) -> None:
    odd = tmp_path / "My Repo (copy)"
    (odd / ".git").mkdir(parents=True)
    assert discover_namespace(odd) == "project/My-Repo-copy"


def test_instructions_prints_the_line_for_agents_md(run: Run) -> None:
    out = run("instructions").stdout
    assert out == (
        "At the start of work call get_project_brief and read_handoff for this repository's "
        "namespace (project/harbor-api); before stopping, record decisions with save_memory "
        "and leave a handoff with create_handoff if work should continue.\n"
    )


@pytest.mark.parametrize(
    ("folder", "namespace"),
    [
        ("_scratch", "project/scratch"),
        ("handoffs", "project/handoffs-repo"),
        ("notes.md", "project/notes.md-repo"),
        ("x" * 100, "project/" + "x" * 64),
    ],
)
def test_any_repository_folder_name_gives_a_valid_namespace(
    tmp_path: Path, folder: str, namespace: str
) -> None:
    from agent_mem_vault.vault.format.namespaces import validate_namespace

    repo = tmp_path / folder
    (repo / ".git").mkdir(parents=True)
    found = discover_namespace(repo)
    assert found == namespace
    assert validate_namespace(found) == found


def test_a_config_file_with_an_invalid_namespace_is_a_clear_error(repo: Path) -> None:
    (repo / ".agent-mem-vault.toml").write_text('namespace = "../elsewhere"\n')
    with pytest.raises(InvalidInputError) as info:
        discover_namespace(repo)
    assert info.value.code == "invalid_namespace"
    assert str(repo / ".agent-mem-vault.toml") in info.value.message
    assert "'..'" in info.value.message and "fix the namespace line" in info.value.message


@pytest.mark.parametrize(
    ("folder", "namespace"),
    [
        ("Café Ünicode 🚀", "project/Cafe-Unicode-rocket"),
        ("東京-api", "project/DongJing-api"),
        ("Проект", "project/Proekt"),
        ("naïve", "project/naive"),
    ],
)
def test_a_non_ascii_folder_name_becomes_readable_ascii_that_keeps_its_meaning(
    tmp_path: Path, folder: str, namespace: str
) -> None:
    repo = tmp_path / folder
    (repo / ".git").mkdir(parents=True)
    assert discover_namespace(repo) == namespace


def _with_remote(root: Path, name: str, url: str) -> Path:
    repo = root / name
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {url}\n')
    return repo


def test_remotes_with_nothing_readable_never_share_a_namespace(tmp_path: Path) -> None:
    from agent_mem_vault.vault.format.namespaces import validate_namespace

    first = discover_namespace(_with_remote(tmp_path, "a", "git@h:acme/___.git"))
    second = discover_namespace(_with_remote(tmp_path, "b", "git@h:acme/---.git"))
    assert first is not None and second is not None
    assert first != second and first.startswith("project/repository-")
    assert validate_namespace(first) == first
    # The same name gives the same namespace, on every machine: two clones agree.
    assert discover_namespace(_with_remote(tmp_path, "c", "git@h:acme/___.git")) == first


def test_emoji_remotes_of_unrelated_repositories_get_different_namespaces(tmp_path: Path) -> None:
    rocket = discover_namespace(_with_remote(tmp_path, "a", "https://h/acme/🚀.git"))
    party = discover_namespace(_with_remote(tmp_path, "b", "https://h/acme/🎉.git"))
    assert (rocket, party) == ("project/rocket", "project/tada")


def test_a_non_ascii_namespace_given_by_hand_is_refused_with_ascii_in_the_error() -> None:
    from agent_mem_vault.vault.format.namespaces import validate_namespace

    with pytest.raises(InvalidInputError) as info:
        validate_namespace("project/Café")
    assert info.value.code == "invalid_namespace"
    assert "ASCII" in info.value.message and "'Cafe'" in info.value.message
