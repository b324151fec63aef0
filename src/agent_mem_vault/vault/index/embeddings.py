"""Embedding backends for search by meaning: a local ONNX model, or an HTTP endpoint.

Search by meaning is optional. With the ``embeddings`` extra installed
(``onnxruntime``, ``tokenizers``, ``numpy``, ``huggingface-hub``) the default
is a local copy of all-MiniLM-L6-v2 run through ``onnxruntime``: a folder
holding ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``. It is
looked for in ``AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR`` if set, else in the
cache folder (``$XDG_CACHE_HOME/agent-mem-vault/models/all-MiniLM-L6-v2``,
``~/.cache/...`` by default), where it is downloaded from the Hugging Face
Hub on first use. Without the extra, or with
``AGENT_MEM_VAULT_EMBEDDINGS=off``, search stays full-text (BM25) only.

The other choice is an OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama,
vLLM, OpenAI): ``AGENT_MEM_VAULT_EMBEDDINGS=openai`` with
``AGENT_MEM_VAULT_EMBEDDING_URL`` (the base URL, ending in ``/v1``),
``AGENT_MEM_VAULT_EMBEDDING_MODEL`` and, if the server wants one,
``AGENT_MEM_VAULT_EMBEDDING_API_KEY``.

Everything heavy is imported on first use, so the CLI starts fast and a vault
without the extra never imports ``numpy``.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ...core.errors import InvalidInputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_REPO",
    "Embedder",
    "EmbeddingSettings",
    "EmbeddingUnavailable",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "default_cache_dir",
    "extra_installed",
    "find_model_files",
    "open_embedder",
]

Backend = Literal["auto", "off", "local", "openai"]
BACKENDS: tuple[Backend, ...] = ("auto", "off", "local", "openai")
DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_REPO = "sentence-transformers/all-MiniLM-L6-v2"
"""Hugging Face Hub repository of the default model: its ``onnx/model.onnx`` and
``tokenizer.json`` are what a first use downloads."""
MAX_TOKENS = 256
"""all-MiniLM-L6-v2 was trained on 256 word pieces; longer text is cut there."""
BATCH = 16
_EXTRA_MODULES = ("onnxruntime", "tokenizers", "numpy")
_NO_EXTRA = "the embeddings extra is not installed: pip install 'agent-mem-vault[embeddings]'"


class EmbeddingUnavailable(Exception):
    """The configured embedder cannot run here; search falls back to full text."""


class Embedder(Protocol):
    """Turns texts into unit-length vectors; ``model`` names the vector space."""

    @property
    def model(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def extra_installed() -> bool:
    """True if the ``embeddings`` extra's libraries can be imported (without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in _EXTRA_MODULES)


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the default model is kept: ``$XDG_CACHE_HOME/agent-mem-vault/models/...``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agent-mem-vault" / "models" / DEFAULT_MODEL


@dataclass(frozen=True, slots=True)
class EmbeddingSettings:
    """Which embedder a vault uses; ``from_env`` reads the ``AGENT_MEM_VAULT_EMBEDDING*`` vars."""

    backend: Backend = "auto"
    model_dir: Path | None = None
    """A folder with ``model.onnx`` and ``tokenizer.json``; ``None``: the cache folder."""
    cache_dir: Path | None = None
    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    min_similarity: float = 0.15
    """Memories found only by meaning must be at least this close (cosine) to the query."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EmbeddingSettings:
        env = os.environ if env is None else env
        backend = env.get("AGENT_MEM_VAULT_EMBEDDINGS", "auto").strip().lower() or "auto"
        if backend not in BACKENDS:
            raise InvalidInputError(
                f"AGENT_MEM_VAULT_EMBEDDINGS must be one of {', '.join(BACKENDS)}, not {backend!r}",
                code="invalid_setting",
                field="AGENT_MEM_VAULT_EMBEDDINGS",
            )
        raw_min = env.get("AGENT_MEM_VAULT_EMBEDDING_MIN_SIMILARITY")
        min_similarity = 0.15
        if raw_min:
            try:
                min_similarity = float(raw_min)
            except ValueError:
                min_similarity = float("nan")
            if not -1.0 <= min_similarity <= 1.0:
                raise InvalidInputError(
                    "AGENT_MEM_VAULT_EMBEDDING_MIN_SIMILARITY must be a number from -1 to 1, "
                    f"not {raw_min!r}",
                    code="invalid_setting",
                    field="AGENT_MEM_VAULT_EMBEDDING_MIN_SIMILARITY",
                )
        model_dir = env.get("AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR")
        settings = cls(
            backend=backend,
            model_dir=Path(model_dir).expanduser() if model_dir else None,
            cache_dir=default_cache_dir(env),
            url=env.get("AGENT_MEM_VAULT_EMBEDDING_URL") or None,
            model=env.get("AGENT_MEM_VAULT_EMBEDDING_MODEL") or None,
            api_key=env.get("AGENT_MEM_VAULT_EMBEDDING_API_KEY") or None,
            min_similarity=min_similarity,
        )
        if backend == "openai" and (settings.url is None or settings.model is None):
            raise InvalidInputError(
                "AGENT_MEM_VAULT_EMBEDDINGS=openai needs AGENT_MEM_VAULT_EMBEDDING_URL (e.g. "
                "http://127.0.0.1:11434/v1) and AGENT_MEM_VAULT_EMBEDDING_MODEL",
                code="invalid_setting",
                field="AGENT_MEM_VAULT_EMBEDDING_URL",
            )
        return settings

    @property
    def local_dir(self) -> Path:
        """The folder the local model is read from."""
        return self.model_dir or self.cache_dir or default_cache_dir()

    def describe(self) -> dict[str, Any]:
        """What ``doctor`` shows: backend, model, where it comes from, whether it is there."""
        if self.backend == "off":
            return {"backend": "off", "mode": "fts", "detail": "AGENT_MEM_VAULT_EMBEDDINGS=off"}
        if self.backend == "openai":
            return {
                "backend": "openai",
                "mode": "hybrid",
                "model": self.model,
                "url": self.url,
            }
        if not extra_installed():
            detail = _NO_EXTRA
            if self.backend == "local":
                return {"backend": "local", "mode": "unavailable", "detail": detail}
            return {"backend": "auto", "mode": "fts", "detail": detail}
        files = find_model_files(self.local_dir)
        detail = "ready"
        if files is None:
            # Searches are full-text until the model is there: say so, not "hybrid".
            mark = self.local_dir / _FAILED_MARK
            detail = (
                f"no model yet; the last download failed: "
                f"{mark.read_text(errors='replace').strip()}"
                if mark.is_file()
                else f"no model yet; it is downloaded from {DEFAULT_REPO} into "
                f"{self.local_dir} on first search, and search is hybrid from then on"
            )
        return {
            "backend": self.backend,
            "mode": "hybrid" if files is not None else "fts",
            "model": DEFAULT_MODEL if self.model_dir is None else str(self.model_dir),
            "model_dir": str(self.local_dir),
            "model_present": files is not None,
            "detail": detail,
        }


def find_model_files(folder: Path) -> tuple[Path, Path] | None:
    """``(model.onnx, tokenizer.json)`` in ``folder`` (or its ``onnx/``), or ``None``."""
    tokenizer = folder / "tokenizer.json"
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file() and tokenizer.is_file():
            return candidate, tokenizer
    return None


RETRY_DOWNLOAD_AFTER = 3600.0
"""Seconds after a failed download before a process tries again (offline machines)."""
_FAILED_MARK = ".download-failed"


def download_default_model(folder: Path) -> tuple[Path, Path]:
    """Fetch the default model's ONNX file and tokenizer into ``folder`` (first use).

    A failure is remembered in ``folder/.download-failed`` for an hour, so that
    on a machine without network every short-lived CLI process does not wait
    for the hub again; delete the file to retry at once.
    """
    mark = folder / _FAILED_MARK
    try:
        age = time.time() - mark.stat().st_mtime
    except OSError:
        age = None
    if age is not None and age < RETRY_DOWNLOAD_AFTER:
        reason = mark.read_text(encoding="utf-8", errors="replace").strip()
        raise EmbeddingUnavailable(
            f"{reason} (tried {int(age // 60)} min ago; delete {mark} to try again now)"
        )
    try:
        return _download(folder)
    except EmbeddingUnavailable as exc:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            mark.write_text(str(exc), encoding="utf-8")
        except OSError:
            pass
        raise


def _download(folder: Path) -> tuple[Path, Path]:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise EmbeddingUnavailable(
            f"no model in {folder} and huggingface-hub is not installed to download it; "
            "install 'agent-mem-vault[embeddings]' or set AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR"
        ) from exc
    _check_hub_reachable(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for name in ("onnx/model.onnx", "tokenizer.json"):
            hf_hub_download(DEFAULT_REPO, name, local_dir=folder)
    except Exception as exc:  # network, offline mode, hub errors: all mean "not here"
        raise EmbeddingUnavailable(
            f"could not download {DEFAULT_REPO} into {folder} ({type(exc).__name__}); "
            "copy model.onnx and tokenizer.json there, or set "
            "AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR, or AGENT_MEM_VAULT_EMBEDDINGS=off"
        ) from exc
    files = find_model_files(folder)
    if files is None:
        raise EmbeddingUnavailable(f"the download into {folder} left no model.onnx")
    return files


def _check_hub_reachable(folder: Path) -> None:
    """Fail at once where the hub's name does not resolve (an offline machine).

    ``huggingface_hub`` retries a failed request five times with backoff, which
    is 24 s of a first search or a ``reindex`` spent waiting on a machine that
    has no network at all. A name that does not resolve will not resolve on the
    second try either; anything subtler is left to the hub client.
    """
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return  # the hub client refuses at once and says offline mode is on
    host = urlsplit(constants.ENDPOINT).hostname
    if not host:
        return
    from urllib.request import getproxies, proxy_bypass

    proxies = getproxies()
    if (proxies.get("https") or proxies.get("all")) and not proxy_bypass(host):
        return  # the proxy resolves the name, not this machine
    try:
        socket.getaddrinfo(host, None)
    except OSError as exc:
        raise EmbeddingUnavailable(
            f"could not download {DEFAULT_REPO}: {constants.ENDPOINT} is not reachable "
            f"({exc.strerror or exc}); copy model.onnx and tokenizer.json into {folder}, "
            "or set AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR, or AGENT_MEM_VAULT_EMBEDDINGS=off"
        ) from None


class OnnxEmbedder:
    """Sentence embeddings from an ONNX BERT-style model: mean pooling, then unit length.

    The same steps as sentence-transformers' all-MiniLM-L6-v2 (word pieces cut
    at 256, mean over the attention mask, L2 normalisation), with no PyTorch.
    The model loads on the first ``embed`` call, once per process.
    """

    def __init__(self, model_file: Path, tokenizer_file: Path, *, model: str) -> None:
        self._model_file = model_file
        self._tokenizer_file = tokenizer_file
        self._model = model
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()

    @property
    def model(self) -> str:
        return self._model

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self._tokenizer_file))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = ort.SessionOptions()
            options.log_severity_level = 3
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.intra_op_num_threads = min(4, os.cpu_count() or 1)
            # onnxruntime's worker threads otherwise spin for a while after each
            # run, taking the cores from the dot product that follows (and from
            # every other process): measured on 2 cores at load 3, a 100,000-vector
            # hybrid search went from 50-64 ms to 21-28 ms with spinning off.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.add_session_config_entry("session.inter_op.allow_spinning", "0")
            try:
                session = ort.InferenceSession(
                    str(self._model_file), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime raises its own exception types
                raise EmbeddingUnavailable(
                    f"{self._model_file} is not a model onnxruntime can load: {exc}"
                ) from exc
            self._inputs = frozenset(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if self._session is None:
            self._load()
        out: list[Vectors] = []
        for start in range(0, len(texts), BATCH):
            encodings = self._tokenizer.encode_batch(list(texts[start : start + BATCH]))
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out.append(_unit(pooled))
        if not out:
            return np.zeros((0, 0), dtype=np.float32)
        return np.concatenate(out)


class OpenAIEmbedder:
    """Vectors from an OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, vLLM, OpenAI)."""

    def __init__(self, url: str, model: str, api_key: str | None, *, timeout: float = 60.0) -> None:
        self._url = url
        self._model_name = model
        self._api_key = api_key
        self._timeout = timeout
        self._client: Any = None

    @property
    def model(self) -> str:
        return f"openai:{self._model_name}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np
        import openai

        if self._client is None:
            self._client = openai.OpenAI(
                base_url=self._url,
                api_key=self._api_key or "unused",
                timeout=self._timeout,
                max_retries=1,
            )
        out: list[list[float]] = []
        for start in range(0, len(texts), 64):
            batch = list(texts[start : start + 64])
            try:
                response = self._client.embeddings.create(
                    model=self._model_name, input=batch, encoding_format="float"
                )
            except openai.OpenAIError as exc:
                raise EmbeddingUnavailable(
                    f"the embeddings endpoint {self._url} failed: {exc}"
                ) from exc
            data = sorted(response.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise EmbeddingUnavailable(
                    f"the embeddings endpoint {self._url} answered {len(data)} vectors "
                    f"for {len(batch)} texts"
                )
            out.extend(list(d.embedding) for d in data)
        if not out:
            return np.zeros((0, 0), dtype=np.float32)
        return _unit(np.asarray(out, dtype=np.float32))


def _unit(vectors: Any) -> Vectors:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: Vectors = (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
    return result


def open_embedder(settings: EmbeddingSettings) -> Embedder:
    """The embedder ``settings`` ask for; ``EmbeddingUnavailable`` says why there is none.

    For the local model this may download it (first use); loading the model
    itself waits for the first ``embed``.
    """
    if settings.backend == "off":
        raise EmbeddingUnavailable("AGENT_MEM_VAULT_EMBEDDINGS=off")
    if settings.backend == "openai":
        assert settings.url is not None and settings.model is not None
        from ...core.extras import has_extra, missing_extra

        if not has_extra("openai") or importlib.util.find_spec("numpy") is None:
            raise EmbeddingUnavailable(
                missing_extra("search by meaning through an endpoint", "embeddings", "openai")
            )
        return OpenAIEmbedder(settings.url, settings.model, settings.api_key)
    if not extra_installed():
        raise EmbeddingUnavailable(_NO_EXTRA)
    folder = settings.local_dir
    files = find_model_files(folder)
    if files is None:
        if settings.model_dir is not None:
            raise EmbeddingUnavailable(
                f"AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR={folder} holds no model.onnx and "
                "tokenizer.json"
            )
        files = download_default_model(folder)
    name = DEFAULT_MODEL if settings.model_dir is None else f"onnx:{folder.name}"
    return OnnxEmbedder(files[0], files[1], model=name)
