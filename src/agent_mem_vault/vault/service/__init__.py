"""The ``Vault`` service that the CLI, MCP, HTTP and Python use.

Holds ``Vault`` itself (``vault``: the operations put together, with init,
rescan, reindex and doctor) and its sync commands (``syncing``), which reach
sync only through what the composition point above (``vault/plug.py``) plugs in.

May import ``vault.ops`` and every layer below it; never ``vault.sync``.
"""
