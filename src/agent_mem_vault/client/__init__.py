"""A Python client for a harness served over HTTP, and a live session view.

>>> from agent_mem_vault.client import HarnessClient, create_session_view
>>> client = HarnessClient("http://127.0.0.1:8000/api/desk", "case-42",
...                        headers={"authorization": "Bearer token-olga"})
>>> view = create_session_view(client)  # async with view: view.messages …
"""

from __future__ import annotations

from ..core.ports import DEMO_URL
from .client import ClientEvent, HarnessClient, PendingWait, Snapshot, TurnResult
from .view import SessionView, ViewState, apply_event, create_session_view

__all__ = [
    "DEMO_URL",
    "ClientEvent",
    "HarnessClient",
    "PendingWait",
    "SessionView",
    "Snapshot",
    "TurnResult",
    "ViewState",
    "apply_event",
    "create_session_view",
]
