"""The harness design's story played through the operator console in a real headless Chromium.

Ada (the customer) uses the demo's chat page, Olga (the operator) the console;
the demo runs as a real ``agent-mem-vault demo support`` process on SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.console.conftest import page_errors, save_readme_picture
from tests.server.support import ADA, OLGA, demo_process

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
        save_readme_picture(olga, artifacts)
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
        # Billing's answers: the refund, that a person takes over, and now the refund's date.
        expect(ada_transcript.locator(".msg[data-author='billing']")).to_have_count(3)
        expect(transcript.locator(".msg[data-author='billing']")).to_have_count(3)
        expect(ada_transcript.locator(".msg[data-author='billing']").nth(1)).to_contain_text(
            "handing you to a person"
        )
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

        # The "moved from" chip leads back to the thread the case came from.
        olga.get_by_test_id("moved-from").click()
        expect(olga.get_by_test_id("thread-title")).to_have_text("case-42")
        expect(olga.locator("#thread-harness")).to_have_text("acme/desk")

    assert {p.name for p in artifacts.glob("*.png")} >= {
        "01-customer-asks-for-a-person.png",
        "02-console-waiting-list.png",
        "03-console-thread-waits-for-a-person.png",
        "04-console-operator-replied.png",
        "05-customer-sees-the-reply.png",
        "06-console-handed-back-to-billing.png",
        "07-console-moved-to-billing-team.png",
    }


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


MARKUP = '<img src=x onerror="window.__xss = 1"><b>refund</b> please'


@pytest.fixture(scope="module")
def waiting_case(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A demo whose case-7 waits for a person; its first message is HTML markup."""
    with demo_process(tmp_path_factory.mktemp("console") / "desk.db") as (url, _):
        desk = f"{url}/api/desk/threads/case-7"
        for body, headers in (
            ({"text": MARKUP}, ADA),
            ({"text": LONG}, ADA),
            ({"text": PERSON}, ADA),
        ):
            assert httpx.post(f"{desk}/messages", json=body, headers=headers).is_success
        share = {"userId": "olga", "role": "operator"}
        assert httpx.post(f"{desk}/members", json=share, headers=ADA).is_success
        yield url


LONG = "A long message. " * 40 + "x" * 300


@pytest.mark.parametrize(
    ("token", "listed"),
    [("token-olga", ["case-7"]), ("token-ada", []), ("token-bob", [])],
    ids=["the operator", "the owner who waits", "another tenant"],
)
def test_console_lists_only_the_threads_the_operator_may_see(
    browser: Any, waiting_case: str, token: str, listed: list[str]
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    page.goto(f"{waiting_case}/console/#token={token}")
    expect(page.get_by_test_id("whoami")).to_contain_text("Signed in as")
    expect(page.locator("#waiting-count")).to_have_text(str(len(listed)))
    buttons = page.get_by_test_id("waiting").locator("button")
    assert [b.get_attribute("data-thread") for b in buttons.all()] == listed
    expect(page.locator("#waiting-empty")).to_be_visible(visible=not listed)
    page.close()


def test_console_shows_message_text_as_text_never_as_html(
    browser: Any, waiting_case: str, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1200, "height": 800})
    errors = page_errors(page)
    page.goto(f"{waiting_case}/console/#token=token-olga")
    page.get_by_test_id("waiting").locator("button[data-thread='case-7']").click()
    first = page.get_by_test_id("transcript").locator(".msg .body").first
    expect(first).to_have_text(MARKUP)
    assert page.locator("#transcript img, #transcript b").count() == 0
    assert page.evaluate("window.__xss") is None
    assert errors == []
    page.screenshot(path=str(artifacts / "10-console-markup-shown-as-text.png"))
    page.close()


def test_console_fits_a_narrow_window_without_sideways_scrolling(
    browser: Any, waiting_case: str, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 400, "height": 860})
    page.goto(f"{waiting_case}/console/#token=token-olga")
    page.get_by_test_id("waiting").locator("button[data-thread='case-7']").click()
    expect(page.get_by_test_id("wait-banner")).to_be_visible()
    expect(page.locator("#reply-send")).to_be_in_viewport()  # the thread was scrolled to
    # Long words wrap inside their bubble; nothing makes the page wider than the window.
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    for bubble in page.locator("#transcript .msg").all():
        box = bubble.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 400
    page.screenshot(path=str(artifacts / "11-console-narrow-window.png"), full_page=True)
    page.close()


@pytest.mark.parametrize(
    ("fragment", "title"),
    [("", "Sign in"), ("#token=not-a-token", "That token is not valid")],
    ids=["no token", "a wrong token"],
)
def test_console_without_a_valid_login_asks_for_one_and_shows_no_threads(
    browser: Any, waiting_case: str, fragment: str, title: str
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    errors = page_errors(page)
    page.goto(f"{waiting_case}/console/{fragment}")
    expect(page.get_by_test_id("empty-title")).to_have_text(title)
    expect(page.locator("#token")).to_be_visible()
    expect(page.locator("#sidebar")).to_be_hidden()
    expect(page.get_by_test_id("toast")).to_be_hidden()  # an expected state, not an error
    assert errors == []
    page.close()


def test_chat_without_a_login_says_how_to_sign_in(browser: Any, waiting_case: str) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    page.goto(f"{waiting_case}/console/chat.html")
    expect(page.get_by_test_id("signed-out")).to_be_visible()
    expect(page.locator("#send-button")).to_be_disabled()
    page.close()


def test_console_keeps_each_event_id_when_a_line_end_is_split_between_chunks(
    browser: Any, waiting_case: str
) -> None:
    """The stream's lines end in CRLF; a chunk may end between the CR and the LF.

    Reading that LF as a blank line would dispatch an event without its id, and
    a reconnect would then send an older id and repeat the event.
    """
    page = browser.new_page()
    page.goto(f"{waiting_case}/console/#token=token-olga")
    got = page.evaluate(
        """async () => {
            const chunks = ["id: 5\\r", "\\ndata: {\\"name\\":\\"a\\"}\\r", "\\n\\r", "\\n",
                            "id: 6\\r\\ndata: {\\"name\\":\\"b\\"}\\r\\n\\r\\n"];
            const encoder = new TextEncoder();
            const body = new ReadableStream({
                start(controller) {
                    for (const c of chunks) controller.enqueue(encoder.encode(c));
                    controller.close();
                },
            });
            const seen = [];
            const signal = new AbortController().signal;
            await readEvents(body, signal, (e, id) => seen.push([e.name, id]));
            return seen;
        }"""
    )
    assert got == [["a", "5"], ["b", "6"]]
    page.close()


def test_operator_lets_the_agent_answer_messages_held_during_the_pause(
    browser: Any, waiting_case: str, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    desk = f"{waiting_case}/api/desk/threads/case-8"
    for text in (REFUND, PERSON):
        assert httpx.post(f"{desk}/messages", json={"text": text}, headers=ADA).is_success
    share = {"userId": "olga", "role": "operator"}
    assert httpx.post(f"{desk}/members", json=share, headers=ADA).is_success
    held = httpx.post(f"{desk}/messages", json={"text": "Is the refund on its way?"}, headers=ADA)
    assert held.json()["status"] == "held"

    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(f"{waiting_case}/console/#token=token-olga")
    page.get_by_test_id("waiting").locator("button[data-thread='case-8']").click()
    expect(page.locator("#held")).to_be_hidden()  # a person still has the thread
    page.select_option("#handback-to", "billing")
    page.click("#handback")
    expect(page.locator("#held")).to_be_visible()
    page.screenshot(path=str(artifacts / "12-console-held-messages.png"))
    page.click("#continue")
    transcript = page.get_by_test_id("transcript")
    # Billing's answers: the refund, that a person takes over, and the held question.
    expect(transcript.locator(".msg[data-author='billing']")).to_have_count(3)
    expect(page.locator("#held")).to_be_hidden()
    page.close()
