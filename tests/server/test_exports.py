"""The public names of the HTTP faces, pinned (STYLE: one flat public namespace)."""

from __future__ import annotations

import agent_mem_vault.client as client
import agent_mem_vault.server as server


def test_server_exports_exactly_its_public_names() -> None:
    assert sorted(server.__all__) == [
        "BadAuthSchemeError",
        "DEFAULT_MAX_BODY_BYTES",
        "bearer_token",
        "create_harness_app",
    ]


def test_client_exports_exactly_its_public_names() -> None:
    assert sorted(client.__all__) == [
        "ClientEvent",
        "DEMO_URL",
        "HarnessClient",
        "PendingWait",
        "SessionView",
        "Snapshot",
        "TurnResult",
        "ViewState",
        "apply_event",
        "create_session_view",
    ]
    for name in client.__all__:
        assert getattr(client, name).__doc__, f"{name} has no docstring"


def test_cli_help_does_not_import_the_server() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from agent_mem_vault.cli.main import main\n"
        "try:\n    main(['demo', '--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'starlette' not in sys.modules and 'uvicorn' not in sys.modules, "
        "sorted(m for m in sys.modules if m.startswith(('starlette', 'uvicorn')))"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
