"""The operations: handoffs, memories and their life, on the lock and the index.

Holds what every operation stands on (``base``: the lock, the index, reads;
``writes``: creating, changing and deleting notes), the handoff operations
(``handoffs``), saving, searching and briefing memories (``memories``),
listing, updating and forgetting them (``memory_life``), the methods that
answer with another's answer in a simpler shape (``views``), and the port
through which they reach a vault's sync without importing it (``port``).

May import ``vault.index``, ``vault.folder``, ``vault.format`` and
``agent_mem_vault.core``; never ``vault.sync`` (the service hands them its port).
"""
