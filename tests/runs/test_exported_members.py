"""The public names of ``agent_mem_vault.runs``."""

from __future__ import annotations

import agent_mem_vault.runs as runs
from agent_mem_vault.core.errors import ConflictError


def test_the_issue_names_are_exported() -> None:
    assert {"RunRegistry", "Run", "RunTakenOver"} <= set(runs.__all__)
    for name in runs.__all__:
        assert getattr(runs, name) is not None


def test_run_taken_over_is_a_conflict_with_a_stable_code() -> None:
    assert issubclass(runs.RunTakenOver, ConflictError)
    assert runs.RunTakenOver.code == "run_taken_over"


def test_registry_methods_are_coroutines() -> None:
    import inspect

    for name in ("start_run", "handoffs", "status", "list_runs", "agents", "record_handoff"):
        assert inspect.iscoroutinefunction(getattr(runs.RunRegistry, name)), name
    for name in ("ensure_current", "heartbeat", "write_handoff"):
        assert inspect.iscoroutinefunction(getattr(runs.Run, name)), name
