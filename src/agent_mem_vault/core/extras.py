"""The optional parts of the package, and the one message for a part that is missing.

A plain install carries what the vault and the coding agents' hooks need; the
OpenAI SDK (``openai`` extra) and psycopg (``postgres`` extra) come only with
their extras. Whoever reaches for one without it gets this message, naming the
extra to install, in the error of its own interface.
"""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRAS", "has_extra", "missing_extra"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "openai": ("openai",),
    "postgres": ("psycopg",),
    "anthropic": ("anthropic",),
    "embeddings": ("onnxruntime", "tokenizers", "numpy", "huggingface_hub"),
}
"""Each extra and the modules it brings."""


def has_extra(extra: str) -> bool:
    """True when every module of ``extra`` can be imported (none is imported here)."""
    return all(importlib.util.find_spec(module) is not None for module in EXTRAS[extra])


def missing_extra(what: str, *extras: str) -> str:
    """The message for ``what`` used without its extras.

    >>> missing_extra("PostgreSQL storage", "postgres").split(": ")[-1]
    "pip install 'agent-mem-vault[postgres]'"
    """
    names = ",".join(extras)
    words = " and ".join(extras)
    kind = "extras" if len(extras) > 1 else "extra"
    return (
        f"{what} needs the {words} {kind}, which a plain install leaves out: "
        f"pip install 'agent-mem-vault[{names}]'"
    )
