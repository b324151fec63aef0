"""One process's state for search by meaning: the embedder, once opened, and the vector copy.

Opening the embedder may download the default model (first use) and loading
it takes about a second, so it is done once per ``Vault`` and never while the
vault lock or the process's index mutex is held. When it cannot be opened the
reason is remembered, and searches answer in full-text mode saying why.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from .embeddings import Embedder, EmbeddingSettings, EmbeddingUnavailable, open_embedder
from .vectors import VectorCache

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["SemanticState"]

QUERY_CACHE = 256
"""Query vectors kept per process: paging through results, or an agent asking
again, repeats a query, and embedding it is most of a search's time."""


class SemanticState:
    """The embedder of one ``Vault`` (or why there is none) and its in-memory vectors."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._failure: str | None = None
        self.cache = VectorCache()
        self._queries_lock = threading.Lock()
        """Not ``_lock``: that one is held while the model opens (or downloads)."""
        self.queries: OrderedDict[tuple[str, str], npt.NDArray[np.float32]] = OrderedDict()

    @property
    def failed(self) -> bool:
        """The embedder was tried and could not be had: search is by words alone."""
        return self._failure is not None

    def query_vector(self, embedder: Embedder, query: str) -> npt.NDArray[np.float32]:
        """The vector of ``query``, embedded once for the last ``QUERY_CACHE`` queries."""
        vector = self.cached_query(embedder, query)
        if vector is None:
            vector = embedder.embed([query])[0]
            self.keep_query(embedder, query, vector)
        return vector

    def cached_query(self, embedder: Embedder, query: str) -> npt.NDArray[np.float32] | None:
        key = (embedder.model, query)
        with self._queries_lock:
            vector = self.queries.get(key)
            if vector is not None:
                self.queries.move_to_end(key)
            return vector

    def keep_query(self, embedder: Embedder, query: str, vector: npt.NDArray[np.float32]) -> None:
        vector = vector.copy()
        vector.flags.writeable = False
        with self._queries_lock:
            self.queries[(embedder.model, query)] = vector
            while len(self.queries) > QUERY_CACHE:
                self.queries.popitem(last=False)

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
        with self._queries_lock:
            self.queries.clear()
