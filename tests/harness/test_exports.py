"""The public names of ``agent_mem_vault.harness`` are pinned here."""

from __future__ import annotations

import inspect

import agent_mem_vault.harness as harness
from agent_mem_vault.store import memory_persistence, sqlite_persistence


def test_every_public_name_is_exported_and_documented() -> None:
    for name in harness.__all__:
        value = getattr(harness, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), f"{name} has no docstring"
    assert harness.memory_persistence is memory_persistence
    assert harness.sqlite_persistence is sqlite_persistence


def test_the_seeds_names_are_public() -> None:
    for name in (
        "define_agent",
        "define_harness",
        "Routing",
        "tool",
        "HarnessHost",
        "Access",
        "members_only",
        "User",
        "Envelope",
        "Endpoint",
        "LogOwnedElsewhereError",
        "HARNESS_EVENTS",
    ):
        assert name in harness.__all__
