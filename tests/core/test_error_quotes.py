"""Errors quote at most 200 characters of a value, wherever the error is made."""

from __future__ import annotations

import errno

import pytest

from agent_mem_vault.core.errors import (
    AccessDeniedError,
    InvalidInputError,
    NotFoundError,
    UnavailableError,
    from_os_error,
)


@pytest.mark.parametrize("value", ["x" * 100_000, "it's " + "y" * 100_000, 'a"b' * 40_000])
def test_a_long_quoted_value_is_cut_to_200_characters_and_its_length(value: str) -> None:
    error = NotFoundError(f"agent {value!r} is not known; use codex", code="unknown", agent=value)
    assert len(error.message) < 300
    assert error.message.endswith("characters)' is not known; use codex") or error.message.endswith(
        'characters)" is not known; use codex'
    )
    assert error.details["agent"] == value[:200] + f"… ({len(value)} characters)"
    assert str(error) == error.message


def test_a_long_unquoted_value_keeps_the_punctuation_after_it() -> None:
    error = InvalidInputError("z" * 5_000 + ": unknown argument, use one of a, b")
    assert error.message == "z" * 200 + "… (5000 characters): unknown argument, use one of a, b"


def test_long_prose_keeps_both_ends_and_short_messages_are_untouched() -> None:
    prose = "word " * 1_000 + "do this"
    error = InvalidInputError(prose)
    assert len(error.message) <= 2_010
    assert error.message.startswith("word word") and error.message.endswith("do this")
    assert InvalidInputError("offset 'x' is wrong").message == "offset 'x' is wrong"


def test_details_are_bounded_inside_lists_and_objects() -> None:
    error = InvalidInputError("bad", errors=[{"field": "f" * 1_000, "problem": "p"}])
    assert error.to_dict()["details"]["errors"] == [
        {"field": "f" * 200 + "… (1000 characters)", "problem": "p"}
    ]


@pytest.mark.parametrize(
    ("number", "branch", "code"),
    [
        (errno.EACCES, AccessDeniedError, "permission_denied"),
        (errno.EPERM, AccessDeniedError, "permission_denied"),
        (errno.EROFS, AccessDeniedError, "permission_denied"),
        (errno.ENOTDIR, InvalidInputError, "bad_path"),
        (errno.ENOENT, InvalidInputError, "bad_path"),
        (errno.ENOSPC, UnavailableError, "no_space"),
    ],
)
def test_an_os_error_becomes_an_error_of_the_tree_naming_the_path(
    number: int, branch: type, code: str
) -> None:
    error = from_os_error(OSError(number, "reason", "/some/vault"))
    assert isinstance(error, branch)
    assert error.code == code
    assert error.message.startswith("the operating system refused /some/vault: reason; ")
    assert error.details == {"path": "/some/vault", "errno": errno.errorcode[number]}


def test_a_failed_connection_is_unavailable_so_a_retry_may_work() -> None:
    error = from_os_error(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"))
    assert isinstance(error, UnavailableError)
    assert (error.code, error.exit_status) == ("connection_failed", 6)
