"""The public names of ``agent_mem_vault.atproto`` (tests outside the project use them)."""

from __future__ import annotations

import agent_mem_vault.atproto as atproto

ISSUE_NAMES = {
    "next_tid",
    "parse_tid",
    "is_valid_tid",
    "is_valid_datetime",
    "is_valid_record_key",
    "is_valid_nsid",
    "is_valid_at_uri",
    "is_valid_did",
    "validate_record",
    "RecordValidationError",
    "record_cid",
}


def test_the_issue_names_are_exported() -> None:
    assert set(atproto.__all__) >= ISSUE_NAMES
    for name in atproto.__all__:
        assert getattr(atproto, name) is not None


def test_validators_are_str_to_bool() -> None:
    for name in ISSUE_NAMES:
        if name.startswith("is_valid_"):
            assert getattr(atproto, name)("") is False


def test_record_validation_error_is_an_invalid_input_error() -> None:
    from agent_mem_vault.core.errors import InvalidInputError

    assert issubclass(atproto.RecordValidationError, InvalidInputError)
