"""The vault face: handoffs and memories as Markdown notes, with a derived index.

>>> from agent_mem_vault.vault import Vault, Handoff  # doctest: +SKIP

The code sits in layers, each a subpackage that imports only those below it
(checked by import-linter: ``pyproject.toml``, contract ``vault-layers``)::

    plug      the composition point: plugs sync into the service
    sync      the notes travelling with git; implements the operations' port
    service   Vault, the one entry point
    ops       handoffs, memories and their life; the port to sync
    index     the SQLite index, scan, watch, keeper, vectors
    folder    the lock, atomic writes, note files, conflict copies
    format    note text, values and rules; pure, no I/O
"""

from __future__ import annotations

from .format import models as _models
from .format.models import *  # noqa: F403  (its __all__, below)
from .index.embeddings import EmbeddingSettings
from .plug import plug_sync_in
from .service.vault import Vault

# Before any module of this package, Python runs this one: every Vault, however it
# was imported, has its sync (the service holds none of its own: plug.py).
plug_sync_in()

# Every value models.py hands out, as models.py lists them.
__all__ = ["EmbeddingSettings", "Vault"]
__all__ += _models.__all__
