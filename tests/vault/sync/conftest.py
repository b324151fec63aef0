"""Machines that share a remote: each its own vault (and HOME for git), one bare repository."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync.syncer import stop_syncer
from tests.git_remote import bare_repo, git, own_git_home

NS = "project/harbor-api"


@pytest.fixture(autouse=True)
def _own_git_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own_git_home(tmp_path, monkeypatch)


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return bare_repo(tmp_path / "remote.git")


Machine = Callable[[str], Vault]


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Machine]:
    """``machine("a")``: a new vault at ``tmp_path/a`` (its syncer stopped at the end)."""
    made: list[Vault] = []

    def make(name: str) -> Vault:
        vault = Vault(tmp_path / name, durable=False)
        vault.init()
        made.append(vault)
        return vault

    yield make
    for vault in made:
        stop_syncer(vault.path)
        vault.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The project's shared repository, with a branch of code on it."""
    repo = bare_repo(tmp_path / "harbor-api.git")
    work = tmp_path / "seed"
    git("clone", "--quiet", repo, work)
    (work / "README.md").write_text("Harbor API\n")
    git("add", "README.md", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "code", cwd=work)
    git("push", "--quiet", "origin", "HEAD:main", cwd=work)
    return repo


def clone_of(project: Path, where: Path) -> Path:
    """A clone of the project's repository at ``where``, as a person makes one."""
    git("clone", "--quiet", project, where)
    return where
