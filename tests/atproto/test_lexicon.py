"""Lexicons: the shipped schemas, and record validation against the official vectors."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from agent_mem_vault.atproto import Lexicons, RecordValidationError, validate_record
from tests.conftest import INTEROP, SHARED

LEXICON_DIR = INTEROP / "lexicon"
RUNS_SPEC = SHARED / "seeds" / "000_c910decd433c7770.txt"
needs_vectors = pytest.mark.skipif(
    not LEXICON_DIR.is_dir(), reason=f"interop vectors not found at {LEXICON_DIR}"
)


def _shipped(name: str) -> str:
    return (
        resources.files("agent_mem_vault.atproto")
        .joinpath("lexicons", f"{name}.json")
        .read_text(encoding="utf-8")
    )


def _catalog() -> Lexicons:
    return Lexicons([json.loads((LEXICON_DIR / "catalog" / "record.json").read_text())])


def _vectors(name: str) -> list[Any]:
    if not LEXICON_DIR.is_dir():
        return []
    cases = json.loads((LEXICON_DIR / name).read_text(encoding="utf-8"))
    return [pytest.param(c, id=f"{i}-{c['name']}") for i, c in enumerate(cases)]


@needs_vectors
@pytest.mark.parametrize("case", _vectors("record-data-valid.json"))
def test_valid_record_data_vectors_pass(case: dict[str, Any]) -> None:
    validate_record(case["data"], case["rkey"], lexicons=_catalog())


@needs_vectors
@pytest.mark.parametrize("case", _vectors("record-data-invalid.json"))
def test_invalid_record_data_vectors_are_rejected_naming_a_field(case: dict[str, Any]) -> None:
    with pytest.raises(RecordValidationError) as info:
        validate_record(case["data"], case["rkey"], lexicons=_catalog())
    assert info.value.field
    assert info.value.code == "invalid_record"


@pytest.mark.skipif(not RUNS_SPEC.exists(), reason=f"runs specification not at {RUNS_SPEC}")
def test_the_handoff_lexicon_is_the_published_schema_exactly() -> None:
    raw = RUNS_SPEC.read_text(encoding="utf-8").split("```json\n", 1)[1].split("```", 1)[0]
    assert _shipped("garden.engram.agents.handoff").strip() == raw.strip()


def test_we_define_the_generator_in_garden_engram_agents_defs() -> None:
    doc = json.loads(_shipped("garden.engram.agents.defs"))
    generator = doc["defs"]["generator"]
    assert doc["id"] == "garden.engram.agents.defs"
    assert set(generator["properties"]) == {"name", "version", "url"}
    assert generator["required"] == ["name", "version"]
    assert "Defined by agent-mem-vault" in generator["description"]


HANDOFF = {
    "$type": "garden.engram.agents.handoff",
    "fromRun": "3kznmn7xqxl22",
    "toRun": "3kznmn7xqxl23",
    "createdAt": "2026-11-30T12:00:00.000Z",
    "generator": {"name": "agent-mem-vault", "version": "0.1.0", "url": "https://example.com"},
}


def test_a_handoff_record_validates_against_the_shipped_lexicon() -> None:
    validate_record(HANDOFF, "3kznmn7xqxl23")


def test_the_record_key_must_be_a_tid_for_handoffs() -> None:
    with pytest.raises(RecordValidationError) as info:
        validate_record(HANDOFF, "self")
    assert info.value.field == "rkey"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"$type": None}, "$type"),
        ({"$type": "com.example.unknown"}, "$type"),
        ({"fromRun": "3KZNMN7XQXL22"}, "fromRun"),
        ({"createdAt": "2026-11-30T12:00:00"}, "createdAt"),
        ({"generator": {"name": "x"}}, "generator.version"),
        ({"generator": {"name": "x", "version": "1", "url": "not a uri"}}, "generator.url"),
    ],
)
def test_a_wrong_handoff_field_is_named(change: dict[str, Any], field: str) -> None:
    record = {**HANDOFF, **change}
    with pytest.raises(RecordValidationError) as info:
        validate_record(record)
    assert info.value.field == field
    assert field in str(info.value)
