"""The vault face: handoffs and memories as Markdown notes, with a derived index.

>>> from agent_mem_vault.vault import Vault, Handoff  # doctest: +SKIP
"""

from __future__ import annotations

from .embeddings import EmbeddingSettings
from .models import (
    Brief,
    BrokenNote,
    DoctorReport,
    FilledNote,
    Handoff,
    HandoffPage,
    HandoffStatus,
    Memory,
    MemoryPage,
    MemoryStatus,
    ReindexReport,
    Repair,
    SearchHit,
    SearchHits,
    SearchPage,
    SkippedNote,
)
from .service import Vault

__all__ = [
    "Brief",
    "BrokenNote",
    "DoctorReport",
    "EmbeddingSettings",
    "FilledNote",
    "Handoff",
    "HandoffPage",
    "HandoffStatus",
    "Memory",
    "MemoryPage",
    "MemoryStatus",
    "ReindexReport",
    "Repair",
    "SearchHit",
    "SearchHits",
    "SearchPage",
    "SkippedNote",
    "Vault",
]
