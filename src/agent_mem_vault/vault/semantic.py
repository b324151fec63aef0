"""One process's state for search by meaning: the embedder, once opened, and the vector copy.

Opening the embedder may download the default model (first use) and loading
it takes about a second, so it is done once per ``Vault`` and never while the
vault lock or the process's index mutex is held. When it cannot be opened the
reason is remembered, and searches answer in full-text mode saying why.
"""

from __future__ import annotations

import threading

from .embeddings import Embedder, EmbeddingSettings, EmbeddingUnavailable, open_embedder
from .vectors import VectorCache

__all__ = ["SemanticState"]


class SemanticState:
    """The embedder of one ``Vault`` (or why there is none) and its in-memory vectors."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._failure: str | None = None
        self.cache = VectorCache()

    def embedder(self, settings: EmbeddingSettings) -> tuple[Embedder | None, str | None]:
        """``(embedder, None)``, or ``(None, why not)``; tried once per process.

        Threads wait here for one another while the first opens it, never for
        the vault: writes go on meanwhile.
        """
        with self._lock:
            if self._embedder is None and self._failure is None:
                try:
                    self._embedder = open_embedder(settings)
                except EmbeddingUnavailable as exc:
                    self._failure = str(exc)
            return self._embedder, self._failure

    def forget(self) -> None:
        """Open the embedder again next time (after its settings changed)."""
        with self._lock:
            self._embedder = None
            self._failure = None
