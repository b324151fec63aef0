"""Every line of the official syntax vectors, read as they are (lines are not stripped)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_mem_vault import atproto
from tests.conftest import INTEROP

SYNTAX = INTEROP / "syntax"

VALIDATORS: dict[str, Callable[[str], bool]] = {
    "tid": atproto.is_valid_tid,
    "datetime": atproto.is_valid_datetime,
    "recordkey": atproto.is_valid_record_key,
    "nsid": atproto.is_valid_nsid,
    "aturi": atproto.is_valid_at_uri,
    "did": atproto.is_valid_did,
    "handle": atproto.is_valid_handle,
    "atidentifier": atproto.is_valid_at_identifier,
    "cid": atproto.is_valid_cid,
    "uri": atproto.is_valid_uri,
    "language": atproto.is_valid_language,
}
# (vector family, file suffix, expected); datetime_parse_invalid holds values
# whose syntax passes but whose calendar does not.
FILES = [(name, "syntax_valid", True) for name in VALIDATORS]
FILES += [(name, "syntax_invalid", False) for name in VALIDATORS]
FILES += [("datetime", "parse_invalid", False)]


def _cases() -> list[object]:
    cases: list[object] = []
    for name, suffix, expected in FILES:
        path = SYNTAX / f"{name}_{suffix}.txt"
        if not path.exists():
            continue
        # split("\n"), not splitlines() or strip(): trailing spaces are part of the vector.
        for lineno, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if not line or line.startswith("#"):
                continue
            cases.append(pytest.param(name, line, expected, id=f"{path.name}:{lineno}"))
    return cases


CASES = _cases()


@pytest.mark.skipif(not SYNTAX.is_dir(), reason=f"interop vectors not found at {SYNTAX}")
@pytest.mark.parametrize(("family", "value", "expected"), CASES)
def test_validator_agrees_with_official_vector(family: str, value: str, expected: bool) -> None:
    assert VALIDATORS[family](value) is expected


@pytest.mark.skipif(not SYNTAX.is_dir(), reason=f"interop vectors not found at {SYNTAX}")
def test_every_required_vector_file_is_read() -> None:
    families = {c.values[0] for c in CASES}  # type: ignore[attr-defined]
    assert {"tid", "datetime", "recordkey", "nsid", "aturi", "did"} <= families
    assert len(CASES) > 500


@pytest.mark.parametrize(
    "value",
    ["3jzfcijpj2z2a\n", "1985-04-12T23:20:50.123Z\n", "did:plc:abc\n"],
)
def test_a_trailing_newline_makes_a_value_invalid(value: str) -> None:
    assert not atproto.is_valid_tid(value)
    assert not atproto.is_valid_datetime(value)
    assert not atproto.is_valid_did(value)


def test_validators_refuse_non_strings() -> None:
    for check in VALIDATORS.values():
        assert check(None) is False  # type: ignore[arg-type]
        assert check(123) is False  # type: ignore[arg-type]


# Vector files deliberately not checked, with the reason.
NOT_CHECKED = {
    "language_parse_invalid.txt": (
        "language tags are checked by syntax only; duplicate variants and singletons "
        "need a full BCP 47 parser, and no field of ours has the language format"
    ),
}


@pytest.mark.skipif(not SYNTAX.is_dir(), reason=f"interop vectors not found at {SYNTAX}")
def test_every_vector_file_is_checked_or_named_as_not_checked() -> None:
    checked = {f"{name}_{suffix}.txt" for name, suffix, _ in FILES}
    present = {p.name for p in SYNTAX.glob("*.txt")}
    assert present - checked == set(NOT_CHECKED)
    assert checked <= present  # a vector file that went missing would shrink the suite
