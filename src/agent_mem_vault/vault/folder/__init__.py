"""The vault folder on disk: the lock, atomic writes, reading a note file, conflict copies.

Holds the layout (``layout``: the vault's own folder, which folder is a vault),
the lock and atomic, durable writes (``files``), the log of repairs the vault
made by itself (``repairs``), a note file read into a record (``records``) and
the copies file-sync tools leave beside a note, merged back (``copies``).

May import ``vault.format`` and ``agent_mem_vault.core``.
"""
