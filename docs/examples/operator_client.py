"""A customer and an operator on the support desk demo, through the HTTP client.

Start the demo in another terminal (``agent-mem-vault demo support``), then::

    python docs/examples/operator_client.py                # the demo at http://127.0.0.1:8766
    python docs/examples/operator_client.py http://127.0.0.1:9000

Ada, the customer, starts a thread, asks for a refund (the desk hands her to
billing), then asks for a person, and shares the thread with Olga as its
operator: an operator sees only the threads shared with her. Olga then opens
the thread, replies as the operator while it waits for her, and hands it back
to billing. Each run uses a new thread, so the script can run again.
"""

from __future__ import annotations

import asyncio
import secrets
import sys

from agent_mem_vault.client import DEMO_URL, HarnessClient, create_session_view

ADA = {"authorization": "Bearer token-ada"}
OLGA = {"authorization": "Bearer token-olga"}


async def main(base: str) -> None:
    desk = f"{base.rstrip('/')}/api/desk"
    thread_id = f"case-{secrets.token_hex(4)}"

    # The customer's side: her first message makes the thread, and she owns it.
    async with HarnessClient(desk, thread_id, headers=ADA) as ada:
        result = await ada.send("I want a refund for order 42.")
        print(f"ada <- {result.text}")
        result = await ada.send("I want to talk to a person, please.")
        print(f"ada <- {result.status}: a person will answer")
        # The step that makes the thread the operator's to see: without it every
        # call of Olga's below is refused with access_denied.
        await ada.share(user_id="olga", role="operator")

    # The operator's side.
    async with HarnessClient(desk, thread_id, headers=OLGA) as olga:
        snapshot = await olga.snapshot()
        wait = next(w for w in snapshot.pending_waits if w.kind == "human")
        print(f"olga sees {thread_id}, waiting: {wait.message}")
        async with create_session_view(olga) as view:  # live: view.messages, each with .agent
            await view.send("Hi, I am Olga. Your refund is on its way.", as_="operator")
            await view.wait_for(lambda state: any(m.role == "user" for m in state.messages))
            print(f"olga's view holds {len(view.messages)} messages")
        await olga.answer(wait.wait_id, {"hand_back": "billing"})  # billing has it again
        after = await olga.snapshot()
        print(f"answers next: {after.active_agent}; open waits: {len(after.pending_waits)}")


if __name__ == "__main__":
    # With no argument: the demo as `agent-mem-vault demo support` starts it, no options.
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else DEMO_URL))
