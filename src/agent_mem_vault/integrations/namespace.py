"""Which namespace a working directory belongs to, so an agent need not be told.

Order: a ``.agent-mem-vault.toml`` in the directory or a parent (``namespace =
"project/harbor-api"``) wins; else the enclosing git repository gives
``project/<name>``, the name taken from the ``origin`` remote when there is one
(so two clones of one repository share a namespace) and from the folder
otherwise, made readable ASCII (``vault.namespaces.ascii_segment``). Outside any
repository there is no default.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from ..core.errors import InvalidInputError
from ..vault.format.namespaces import ascii_segment, validate_namespace

__all__ = ["CONFIG_FILE", "discover_namespace", "find_repo_root"]

CONFIG_FILE = ".agent-mem-vault.toml"
PREFIX = "project/"


def discover_namespace(cwd: str | Path) -> str | None:
    """The namespace for ``cwd``, or None outside a repository with no config file.

    >>> discover_namespace("/src/harbor-api/app")  # doctest: +SKIP
    'project/harbor-api'
    """
    start = Path(cwd).resolve()
    for folder in (start, *start.parents):
        config = folder / CONFIG_FILE
        if config.is_file():
            return _from_config(config)
        if (folder / ".git").exists():
            return PREFIX + ascii_segment(_remote_name(folder) or folder.name)
    return None


def find_repo_root(cwd: str | Path) -> Path | None:
    """The nearest folder at or above ``cwd`` holding ``.git`` or the config file."""
    start = Path(cwd).resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists() or (folder / CONFIG_FILE).is_file():
            return folder
    return None


def _from_config(path: Path) -> str:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError(
            f"{path} is not valid TOML ({exc}); fix it or delete it", path=str(path)
        ) from exc
    namespace = data.get("namespace")
    if not isinstance(namespace, str) or not namespace.strip():
        raise InvalidInputError(
            f'{path} has no namespace: add a line such as namespace = "project/harbor-api"',
            path=str(path),
        )
    try:
        return validate_namespace(namespace.strip())
    except InvalidInputError as exc:
        raise InvalidInputError(
            f"{path}: {exc.message}; fix the namespace line there",
            code=exc.code,
            path=str(path),
        ) from None


_URL_TAIL = re.compile(r"[/:]([^/:]+?)(?:\.git)?/?$")


def _remote_name(repo: Path) -> str | None:
    """The repository name from ``.git/config``'s origin url, without running git."""
    git = repo / ".git"
    if git.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = git.read_text(encoding="utf-8", errors="replace").strip()
        if not text.startswith("gitdir:"):
            return None
        git = (repo / text.removeprefix("gitdir:").strip()).resolve()
        common = git / "commondir"
        if common.is_file():
            git = (git / common.read_text(encoding="utf-8").strip()).resolve()
    try:
        config = (git / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    section = ""
    for raw in config.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line
        elif section == '[remote "origin"]' and line.startswith("url"):
            url = line.split("=", 1)[1].strip()
            match = _URL_TAIL.search(url)
            return match.group(1) if match else None
    return None
