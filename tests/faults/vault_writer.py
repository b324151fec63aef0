"""A writer that creates handoffs until it is killed, printing each acknowledged id.

``python -m tests.faults.vault_writer VAULT CONTEXT_CHARS`` creates handoffs in
``project/harbor-api`` one after the other, each with a context of that many
characters, and prints ``{"ok": id}`` (flushed) once each create has returned:
a printed id is an acknowledged handoff, which no kill may lose.
"""

from __future__ import annotations

import json
import sys

from agent_mem_vault.vault import Vault

NS = "project/harbor-api"


def main(path: str, chars: int) -> None:
    vault = Vault(path)
    while True:
        h = vault.create_handoff(to="b", summary="s", context="x" * chars, namespace=NS, from_="a")
        print(json.dumps({"ok": h.id}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
