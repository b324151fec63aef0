"""Search excerpts: the words around a match, matched words in brackets, in bounded time."""

from __future__ import annotations

from agent_mem_vault.vault.format.snippets import fold, snippet


def test_matched_words_are_bracketed_whatever_their_case_or_accents() -> None:
    text = "Le Café ouvre tôt; the CAFE closes and the cafe is full."
    assert snippet(["café"], text) == (
        "Le [Café] ouvre tôt; the [CAFE] closes and the [cafe] is full."
    )
    assert fold("Tôt") == "tot"


def test_a_word_inside_a_longer_word_is_not_a_match() -> None:
    assert snippet(["lock"], "unlocked blocks, then a lock") == "unlocked blocks, then a [lock]"


def test_an_excerpt_of_a_long_text_is_a_few_words_with_ellipses() -> None:
    text = " ".join(f"w{i}" for i in range(5000)) + " needle " + " ".join("tail" for _ in range(50))
    excerpt = snippet(["needle"], text)
    assert excerpt.startswith("…") and excerpt.endswith("…")
    assert "[needle]" in excerpt and len(excerpt.split()) == 12


def test_the_first_text_that_holds_a_word_gives_the_excerpt() -> None:
    assert snippet(["deploy"], "nothing here", "Deploy on Fridays") == "[Deploy] on Fridays"


def test_without_a_match_the_start_of_the_text_is_shown() -> None:
    text = "Lines   spread\nover   several\n\nlines " + "more " * 40
    expected = "Lines spread over several lines " + "more " * 6 + "more…"
    assert snippet(["absent"], text) == expected
