"""The composition point: the one place where the vault meets its sync.

Sync (``vault/sync``) stands above the service: it implements the operations'
port (``ops/port.py``) and drives a vault through the methods the operations
stand on. Nothing below it imports it, with one exception, made here and only
when a route is configured: the functions below import it when called, so a
vault with no route never loads a module of ``vault.sync`` (a test holds
this), and the import-linter contract in ``pyproject.toml`` names this module
as the one allowed to.

- ``port_for``: the port a vault's operations talk to (``Vault._port``);
- ``sync_commands``: the sync commands of ``Vault`` (join, sync, status …);
- ``run_keeper``: the keeper process, whose watch tells the vault's sync what
  changed by hand, as every write does.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from ..folder.layout import syncs
from ..index import keeper
from ..ops.port import NO_SYNC, SyncPort

__all__ = ["port_for", "run_keeper", "sync_commands"]


def port_for(root: Path) -> SyncPort:
    """The sync of the vault at ``root``: ``NO_SYNC`` unless a route is configured (one
    ``stat``), else git's (``sync/port.py``)."""
    if not syncs(root):
        return NO_SYNC
    from ..sync.port import GitSync

    return GitSync(root)


def sync_commands() -> ModuleType:
    """The module of sync's commands (``sync/operations.py``), loaded when one is run."""
    from ..sync import operations

    return operations


def run_keeper(root: Path, idle: float | None = None) -> int:
    """The keeper of the vault at ``root`` (``index/keeper.py``), telling the vault's sync
    what its watch applied."""
    root = root.expanduser().absolute()
    return keeper.run_keeper(root, idle, lambda paths: port_for(root).changed(paths))
