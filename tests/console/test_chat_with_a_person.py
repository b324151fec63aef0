"""The customer's chat page when a person takes over, and when its link's token is wrong.

A real ``agent-mem-vault demo support`` process and a real headless Chromium.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.console.conftest import page_errors
from tests.server.support import demo_process

pytestmark = pytest.mark.slow

PERSON = "Can I talk to a person, please?"


def test_a_customer_handed_to_a_person_reads_so_on_the_chat_page(
    browser: Any, artifacts: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    with demo_process(tmp_path / "desk.db") as (url, _):
        page = browser.new_page()
        errors = page_errors(page)
        page.goto(f"{url}/console/chat.html?thread=case-9#token=token-ada")
        expect(page.get_by_test_id("whoami")).to_have_text("Signed in as ada")
        expect(page.get_by_test_id("with-person")).to_be_hidden()
        page.fill("#text", PERSON)
        page.click("#send-button")
        notice = page.get_by_test_id("with-person")
        expect(notice).to_be_visible()
        expect(notice).to_contain_text("handed to a person from the team")
        expect(notice).to_contain_text("messages you send meanwhile are kept")
        # The desk's own reply says it too, in the transcript.
        expect(page.get_by_test_id("transcript")).to_contain_text("handing you to a person")
        page.screenshot(path=str(artifacts / "chat-handed-to-a-person.png"))
        # Coming back to the page later shows the same, from the thread's snapshot.
        page.reload()
        expect(page.get_by_test_id("with-person")).to_be_visible()
        assert errors == []
        page.close()


def test_the_chat_page_with_a_token_that_is_not_valid_says_so_and_sends_nothing(
    browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    with demo_process(tmp_path / "desk.db") as (url, _):
        page = browser.new_page()
        errors = page_errors(page)
        page.goto(f"{url}/console/chat.html#token=not-a-token")
        signed_out = page.get_by_test_id("signed-out")
        expect(signed_out).to_be_visible()
        expect(signed_out).to_contain_text("The sign-in token of this link is not valid.")
        expect(page.locator("#send-button")).to_be_disabled()
        expect(page.get_by_test_id("toast")).to_be_hidden()  # an expected state, not an error
        assert errors == []
        page.close()
