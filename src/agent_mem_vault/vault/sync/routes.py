"""Where a vault's notes travel: its routes, kept in ``.agent-mem-vault-sync/config.json``.

A route is a git remote and two refs on it, a log and a checkpoint (``log.py``):

- the **vault route**: the whole vault through a remote of its own (any URL
  git accepts), its checkpoint on the branch ``main`` (a plain clone of that
  remote shows the notes as of the checkpoint);
- a **project route**: one namespace through the project's own repository
  (the remote ``origin`` of a clone on this machine), on
  ``refs/agent-mem-vault/<namespace>`` and ``refs/agent-mem-vault-log/<namespace>``:
  not branches, so no branch list, pull request or plain clone shows them, and
  only that namespace's notes go there.

Each note travels by at most one route: the project route of its namespace if
there is one, else the vault route. Only notes travel (``travels``): Markdown
files outside dot-folders and ``_dashboards/``; never the index, the lock,
runtime files or a file-sync tool's conflict copies.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ...core.errors import DataError, InvalidInputError, NotFoundError
from ..folder.copies import copy_of
from ..folder.files import atomic_write

__all__ = [
    "CONFIG",
    "SYNC_DIR",
    "VAULT_REF",
    "Route",
    "SyncConfig",
    "check_url",
    "load_config",
    "namespace_of",
    "project_ref",
    "route_git_dir",
    "route_named",
    "save_config",
    "travels",
]

SYNC_DIR = ".agent-mem-vault-sync"
"""The vault's sync folder: its routes, a git folder for the vault route, the
changes waiting to be committed, each route's state. A dot-folder: Obsidian,
the index and git leave it alone, and it never travels."""
CONFIG = "config.json"
VAULT_REF = "refs/heads/main"
"""The branch the vault route keeps its checkpoint on, in the vault's own remote."""
PROJECT_REFS = "refs/agent-mem-vault/"
LOG_REFS = "refs/agent-mem-vault-log/"
_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@?#]*:[^/@?#]*@")
_LEAVES = ("handoffs", "memories")


@dataclass(frozen=True, slots=True)
class Route:
    """One way notes travel: a remote and the ref the notes are kept on there."""

    remote: str
    """For the vault route, the remote's URL (or path); for a project route, the
    name of the remote in ``repo`` (``origin``), so that git uses that clone's own
    settings for it (its URL, credentials and extra headers, as in CI)."""
    ref: str
    """The ref of the route's checkpoint on the remote: ``VAULT_REF`` or
    ``project_ref(namespace)``."""
    namespace: str | None = None
    """None: the whole vault (but the namespaces that have a route of their own)."""
    repo: str | None = None
    """A project route: the clone whose git folder keeps the route's objects."""
    url: str = ""
    """What ``remote`` pointed at when the route was made, for people to read."""
    sign: str | None = None
    """The SSH key every commit sent by this route is signed with (``sync init --sign``:
    a key file or ``key::`` and a public key, as ``user.signingkey`` takes it); None:
    signed only if the person's git signs their commits (``signing.py``)."""
    layout: int = 1
    """The refs the route keeps on its remote (``layout.py``): 1, one log for every
    machine (``log.py``); 2, a log per machine (``team.py``)."""
    branch: str | None = None
    """``refs/heads/<name>``: the one branch every machine's entries ride, for a host that
    takes only branches (``team_branch.py``); None: refs of the route's own."""
    signers: str | None = None
    """The allowed signers file (git's format) entries that arrive are checked against
    (``agent-mem-vault trust signers``); None: git's ``gpg.ssh.allowedSignersFile``, if any
    (``signers.py``)."""
    trust: str | None = None
    """``off`` keeps a route from checking although it has a signers file; None: it checks
    once it has one."""
    signers_branch: str | None = None
    """A project route's team keeps its signers file on this branch of the project
    (``signers_branch.py``): taken change by change, each only if signed by a key the list
    already names; None: ``signers``, or git's."""

    @property
    def log_ref(self) -> str:
        """The ref on the remote of the route's log (``log.py``); ``ref`` holds its
        checkpoint."""
        return LOG_REFS + ("vault" if self.namespace is None else self.namespace)

    @property
    def key(self) -> str:
        """A file name for the route's lock, index and state."""
        if self.namespace is None:
            return "vault"
        return "ns-" + self.namespace.replace("/", "+")

    @property
    def label(self) -> str:
        """How messages name the route: the remote and what travels there."""
        where = self.url or self.remote
        if self.namespace is None:
            return f"the vault's remote {where}"
        return f"{self.namespace}'s remote {where} ({self.ref})"


@dataclass(frozen=True, slots=True)
class SyncConfig:
    """A vault's sync settings."""

    vault_id: str
    """Names this vault's own refs inside a project's repository (two vaults on one
    machine may route the same namespace through the same clone)."""
    machine: str
    """Written as ``read_on`` on each handoff a read takes here (docs/sync.md)."""
    routes: tuple[Route, ...] = field(default=())

    @property
    def vault_route(self) -> Route | None:
        for route in self.routes:
            if route.namespace is None:
                return route
        return None

    def route_for(self, namespace: str) -> Route | None:
        """The route a namespace's notes travel by, or None (they stay here)."""
        for route in self.routes:
            if route.namespace == namespace:
                return route
        return self.vault_route

    def route_of(self, path: str) -> Route | None:
        """The route the note at ``path`` (relative, ``/``-separated) travels by."""
        if not travels(path):
            return None
        namespace = namespace_of(path)
        if namespace is not None:
            return self.route_for(namespace)
        return self.vault_route

    def covers(self, route: Route, path: str) -> bool:
        """Whether ``path`` travels by ``route`` (the test a remote's paths pass too)."""
        return self.route_of(path) == route

    def with_route(self, route: Route) -> SyncConfig:
        """This config with ``route`` added, or in place of the route of the same key."""
        others = tuple(r for r in self.routes if r.key != route.key)
        return replace(self, routes=(*others, route))

    def without(self, route: Route) -> SyncConfig:
        return replace(self, routes=tuple(r for r in self.routes if r.key != route.key))


def travels(path: str) -> bool:
    """Whether the file at ``path`` is a note that may travel: Markdown, inside the
    vault, not in a dot-folder or ``_dashboards/``, not a sync tool's conflict copy.

    >>> travels("project/a/handoffs/3l6qyvzp7ns2c.md"), travels(".obsidian/x.md")
    (True, False)
    """
    if not path.endswith(".md") or path.startswith("/") or "\\" in path:
        return False
    parts = path.split("/")
    if parts[0] == "_dashboards" or any(not p or p[0] == "." for p in parts):
        return False
    return copy_of(parts[-1]) is None


def namespace_of(path: str) -> str | None:
    """The namespace a note belongs to: ``<ns>/handoffs/…``, ``<ns>/memories/…``,
    ``<ns>/_brief.md``; None for any other note."""
    folder, _, name = path.rpartition("/")
    if name == "_brief.md":
        return folder or None
    head, _, leaf = folder.rpartition("/")
    if leaf in _LEAVES and head:
        return head
    return None


def project_ref(namespace: str) -> str:
    """The ref a project route keeps ``namespace``'s notes on."""
    return PROJECT_REFS + namespace


def check_url(url: str) -> str:
    """``url`` if git may be given it: refused when it carries a password, which
    would be written into the vault's files and shown in every message.

    >>> check_url("https://git.example/team/notes.git")
    'https://git.example/team/notes.git'
    """
    url = url.strip()
    if not url:
        raise InvalidInputError(
            "the remote is empty: give a URL or path git accepts, e.g. "
            "git@host:team/vault.git or /mnt/backup/vault.git",
            code="invalid_remote",
            field="remote",
        )
    if _PASSWORD.match(url):
        scheme, _, rest = url.partition("://")
        user = rest.split(":", 1)[0]
        shown = f"{scheme}://{user}:***@{rest.split('@', 1)[1]}"
        raise InvalidInputError(
            f"the remote {shown} carries a password; give it without one and let git's "
            "credential helper keep it (git config --global credential.helper store, or "
            "cache), or use an ssh key",
            code="remote_has_password",
            field="remote",
        )
    if url.startswith("-"):
        raise InvalidInputError(
            f"the remote {url!r} starts with '-', which git would read as an option",
            code="invalid_remote",
            field="remote",
        )
    return url


def config_file(root: Path) -> Path:
    return root / SYNC_DIR / CONFIG


def load_config(root: Path) -> SyncConfig | None:
    """The vault's sync config, or None if it syncs nowhere."""
    path = config_file(root)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
        routes = tuple(Route(**r) for r in data.get("routes", []))
        return SyncConfig(str(data["vault_id"]), str(data["machine"]), routes)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise DataError(
            f"{path} cannot be read ({type(exc).__name__}: {exc}); fix it, or delete the "
            f"folder {path.parent} and join the remote again with 'agent-mem-vault sync init'",
            code="sync_config_damaged",
            path=str(path),
        ) from None


def save_config(root: Path, config: SyncConfig) -> None:
    """Write the config atomically (the caller holds the vault lock)."""
    folder = root / SYNC_DIR
    folder.mkdir(exist_ok=True)
    data: dict[str, Any] = asdict(config)
    for route in data["routes"]:
        if route.get("sign") is None:
            del route["sign"]  # a config an older release can still read
        if route.get("layout") == 1:
            del route["layout"]
        for name in ("branch", "signers", "trust", "signers_branch"):
            if route.get(name) is None:
                del route[name]
    atomic_write(config_file(root), json.dumps(data, indent=2) + "\n")


def new_config() -> SyncConfig:
    """A config for a vault that joins its first remote: a new id, this machine's name."""
    host = socket.gethostname().split(".")[0] or "machine"
    host = re.sub(r"[^A-Za-z0-9._-]", "-", host)[:40]
    return SyncConfig(vault_id=secrets.token_hex(4), machine=f"{host}-{secrets.token_hex(2)}")


def route_git_dir(root: Path, route: Route) -> Path:
    """The git folder that keeps ``route``'s objects: the vault route's own, in the sync
    folder; a project route's clone's."""
    return root / SYNC_DIR / f"{route.key}.git" if route.repo is None else Path(route.repo)


def route_named(root: Path, namespace: str | None, hint: str) -> tuple[SyncConfig, Route]:
    """The config and the route of ``namespace`` (None: the vault's); ``no_sync_route``,
    ending with ``hint``, when there is none."""
    config = load_config(root)
    route = None
    if config is not None:
        route = next((r for r in config.routes if r.namespace == namespace), None)
    if config is None or route is None:
        what = "the vault" if namespace is None else f"namespace {namespace}"
        raise NotFoundError(f"{what} syncs with no remote here; {hint}", code="no_sync_route")
    return config, route


def sync_dir(root: Path) -> Path:
    return root / SYNC_DIR


def is_synced(root: Path) -> bool:
    return os.path.exists(config_file(root))
