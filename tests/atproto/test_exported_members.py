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


VALID = {
    "is_valid_tid": "3jzfcijpj2z2a",
    "is_valid_datetime": "1985-04-12T23:20:50.123Z",
    "is_valid_record_key": "self",
    "is_valid_nsid": "garden.engram.agents.handoff",
    "is_valid_at_uri": "at://did:plc:asdf123/garden.engram.agents.handoff/3jzfcijpj2z2a",
    "is_valid_did": "did:plc:7iza6de2dwap2sbkpav7c6c6",
}


def test_validators_are_str_to_bool() -> None:
    assert {n for n in ISSUE_NAMES if n.startswith("is_valid_")} == set(VALID)
    for name, good in VALID.items():
        check = getattr(atproto, name)
        assert check(good) is True, name
        assert check("") is False, name
        assert check(good + " ") is False, name


def test_record_validation_error_is_an_invalid_input_error() -> None:
    from agent_mem_vault.core.errors import InvalidInputError

    assert issubclass(atproto.RecordValidationError, InvalidInputError)
