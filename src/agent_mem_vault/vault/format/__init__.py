"""The note format: what a note says and the rules over it, as pure functions.

Holds the values (``models``: handoffs, memories, pages, reports), a note's
text read and written (``notes``, ``hand_notes``, ``links``), what callers may
name (``namespaces``: validation, page limits), the rules of a handoff's and a
memory's life (``lifecycle``), the merge of two versions of a note by fields
(``merge``), the brief and dashboard templates (``brief``, ``dashboard``) and
search snippets (``snippets``).

No I/O: nothing here opens a file, takes a lock or runs SQL. May import
``agent_mem_vault.core`` and nothing else of the vault.
"""
