"""The seed's story played through the operator console in a real headless Chromium.

Ada (the customer) uses the demo's chat page, Olga (the operator) the console;
the demo runs as a real ``agent-mem-vault demo support`` process on SQLite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.support import OLGA, demo_process

pytestmark = pytest.mark.slow

REFUND = "I want a refund for order 42."
PERSON = "Can I talk to a person, please?"
REPLY = "Hi, I am Olga from the support team. I am looking at your refund now."


def test_operator_takes_over_replies_hands_back_and_moves_the_case(
    browser: Any, artifacts: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    with demo_process(tmp_path / "desk.db") as (url, _):
        ada = browser.new_context(viewport={"width": 900, "height": 800}).new_page()
        olga = browser.new_context(viewport={"width": 1360, "height": 900}).new_page()
        for page in (ada, olga):
            page.on("pageerror", lambda exc: pytest.fail(f"page error: {exc}"))

        # Ada asks for a refund: the desk hands off to billing, which answers.
        ada.goto(f"{url}/console/chat.html?thread=case-42#token=token-ada&operator=olga")
        expect(ada.get_by_test_id("whoami")).to_have_text("Signed in as ada")
        ada.fill("#text", REFUND)
        ada.click("#send-button")
        ada_transcript = ada.get_by_test_id("transcript")
        expect(ada_transcript.locator(".msg[data-author='billing']")).to_contain_text("refund")
        ada.fill("#text", PERSON)
        ada.click("#send-button")
        expect(ada.get_by_test_id("active-agent")).to_have_text("a person will answer")
        ada.screenshot(path=str(artifacts / "01-customer-asks-for-a-person.png"))

        # Olga sees the thread among those waiting for a person, and opens it.
        olga.goto(f"{url}/console/#token=token-olga")
        expect(olga.get_by_test_id("whoami")).to_have_text("Signed in as olga")
        waiting = olga.get_by_test_id("waiting").locator("button[data-thread='case-42']")
        expect(waiting).to_contain_text("The user asks for a person")
        olga.screenshot(path=str(artifacts / "02-console-waiting-list.png"))
        waiting.click()
        transcript = olga.get_by_test_id("transcript")
        expect(transcript.locator(".msg[data-author='User']").first).to_have_text(f"User{REFUND}")
        expect(transcript.locator(".msg[data-author='billing']").first).to_contain_text("refund")
        expect(transcript.locator(".event").first).to_contain_text("handed off to billing")
        expect(olga.get_by_test_id("wait-banner")).to_be_visible()
        expect(olga.get_by_test_id("live")).to_have_text("live")
        olga.screenshot(path=str(artifacts / "03-console-thread-waits-for-a-person.png"))

        # Olga replies as the operator: both open views show it at once.
        olga.fill("#reply-text", REPLY)
        olga.click("#reply-send")
        expect(transcript.locator(".msg[data-author='Operator · olga']")).to_contain_text(REPLY)
        expect(ada_transcript.locator(".msg[data-author='Operator · olga']")).to_contain_text(REPLY)
        olga.screenshot(path=str(artifacts / "04-console-operator-replied.png"))
        ada.screenshot(path=str(artifacts / "05-customer-sees-the-reply.png"))

        # Olga hands the thread back to billing; the pause ends and billing answers Ada.
        olga.select_option("#handback-to", "billing")
        olga.click("#handback")
        expect(olga.get_by_test_id("wait-banner")).to_be_hidden()
        expect(olga.locator("#end-pause")).to_be_hidden()
        expect(olga.get_by_test_id("active-agent")).to_have_text("answers next: billing")
        expect(olga.get_by_test_id("waiting").locator("button")).to_have_count(0)
        ada.fill("#text", "Thanks. When does the refund for order 42 arrive?")
        ada.click("#send-button")
        expect(ada_transcript.locator(".msg[data-author='billing']")).to_have_count(2)
        expect(transcript.locator(".msg[data-author='billing']")).to_have_count(2)
        olga.screenshot(path=str(artifacts / "06-console-handed-back-to-billing.png"))

        # The case moves to the billing team's harness with a note.
        olga.select_option("#transfer-to", "billing")
        olga.fill("#transfer-note", "Refund for order 42. The user waits.")
        olga.click("#transfer button[type='submit']")
        expect(olga.get_by_test_id("thread-title")).not_to_have_text("case-42")
        expect(olga.locator("#thread-harness")).to_have_text("acme/billing")
        expect(olga.get_by_test_id("moved-from")).to_have_text("moved from acme/desk · case-42")
        expect(transcript.locator(".msg").first).to_contain_text("Refund for order 42.")
        olga.screenshot(path=str(artifacts / "07-console-moved-to-billing-team.png"))

        target = olga.get_by_test_id("thread-title").inner_text()
        snap = httpx.get(f"{url}/api/billing/threads/{target}", headers=OLGA).json()
        assert snap["messages"][0]["parts"][0]["text"] == "Refund for order 42. The user waits."
        source = httpx.get(f"{url}/api/desk/threads/case-42", headers=OLGA).json()
        assert source["activeAgent"] == "billing"  # the source thread keeps running

    assert sorted(p.name for p in artifacts.glob("*.png")) == [
        "01-customer-asks-for-a-person.png",
        "02-console-waiting-list.png",
        "03-console-thread-waits-for-a-person.png",
        "04-console-operator-replied.png",
        "05-customer-sees-the-reply.png",
        "06-console-handed-back-to-billing.png",
        "07-console-moved-to-billing-team.png",
    ]


def test_console_shows_a_rejection_code_instead_of_failing_silently(
    browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    with demo_process(tmp_path / "desk.db") as (url, _):
        page = browser.new_page()
        page.goto(f"{url}/console/#token=token-olga")
        expect(page.get_by_test_id("whoami")).to_have_text("Signed in as olga")
        page.fill("#open-id", "no-such-thread")
        page.click("#open-thread button")
        expect(page.get_by_test_id("toast")).to_contain_text("[thread_not_found]")
        page.close()
