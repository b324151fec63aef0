"""The ``Vault`` service that the CLI, MCP, HTTP and Python use.

Holds ``Vault`` itself (``vault``: the operations put together, with init,
rescan, reindex and doctor), its sync commands (``syncing``) and the
composition point where sync is plugged in (``plug``): the one module that
imports ``vault.sync``, when called and only for a vault with a route.

May import ``vault.ops`` and every layer below it.
"""
