"""The derived index, and keeping it current with the notes.

Holds the SQLite index (``db``: its rows, ``rows``; its answers, ``queries``;
which notes a listing takes, ``filters``; its schema as named migrations,
``schema``), the scan that brings it up to date (``scan``), watching the
folder (``watch``, ``inotify``), the keeper process that watches for every
process (``keeper``; how a process asks it, ``keeper_link``), how a process
keeps its index current (``upkeep``), and search by meaning (``embeddings``,
``vectors``, ``semantic``).

Markdown is the truth; everything here can be rebuilt from the notes. May
import ``vault.folder``, ``vault.format`` and ``agent_mem_vault.core``.
"""
