"""The composition point: the one place where the vault meets its sync.

It stands above both. The service (``service/``) knows sync only as the
operations' port (``ops/port.py``) and a provider of its commands, which it
holds empty (``NO_SYNC``) until this module plugs git's in: the package's face
(``vault/__init__.py``) does that when it is imported, which Python does before
any module of the package, so every ``Vault`` has it. Sync (``vault/sync``)
implements the port and drives the service's vault; the service never imports
it. The functions below import it when called, and only for a vault with a
route configured, so a vault with no route never loads a module of
``vault.sync`` (a test holds this).

- ``port_for``: the port a vault's operations talk to (``Vault._port``);
- ``sync_commands``: the sync commands of ``Vault`` (join, sync, status …);
- ``run_keeper``: the keeper process, whose watch tells the vault's sync what
  changed by hand, as every write does.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from .folder.layout import syncs
from .index import keeper
from .ops.port import NO_SYNC, SyncPort
from .service import syncing

__all__ = ["plug_sync_in", "port_for", "run_keeper", "sync_commands"]


def plug_sync_in() -> None:
    """Hand the service git's sync, for every ``Vault`` (``vault/__init__.py`` calls this)."""
    syncing.plug_in(port_for, sync_commands)


def port_for(root: Path) -> SyncPort:
    """The sync of the vault at ``root``: ``NO_SYNC`` unless a route is configured (one
    ``stat``), else git's (``sync/port.py``)."""
    if not syncs(root):
        return NO_SYNC
    from .sync.port import GitSync

    return GitSync(root)


def sync_commands() -> ModuleType:
    """The module of sync's commands (``sync/operations.py``), loaded when one is run."""
    from .sync import operations

    return operations


def run_keeper(root: Path, idle: float | None = None) -> int:
    """The keeper of the vault at ``root`` (``index/keeper.py``), telling the vault's sync
    what its watch applied."""
    root = root.expanduser().absolute()
    return keeper.run_keeper(root, idle, lambda paths: port_for(root).changed(paths))
