"""DAG-CBOR and CIDs: the official data-model fixtures, byte for byte."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agent_mem_vault.atproto import encode_dag_cbor, record_cid
from agent_mem_vault.atproto.cbor import decode_dag_cbor, to_ipld
from agent_mem_vault.core.errors import InvalidInputError
from tests.conftest import INTEROP

DATA_MODEL = INTEROP / "data-model"
needs_vectors = pytest.mark.skipif(
    not DATA_MODEL.is_dir(), reason=f"interop vectors not found at {DATA_MODEL}"
)


def _load(name: str) -> list[Any]:
    if not DATA_MODEL.is_dir():
        return []
    items = json.loads((DATA_MODEL / name).read_text(encoding="utf-8"))
    return [pytest.param(x, id=f"{i}-{x.get('note', '')}") for i, x in enumerate(items)]


def _b64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


@needs_vectors
@pytest.mark.parametrize("fixture", _load("data-model-fixtures.json"))
def test_fixture_encodes_to_the_same_bytes_and_cid(fixture: dict[str, Any]) -> None:
    assert encode_dag_cbor(fixture["json"]) == _b64(fixture["cbor_base64"])
    assert record_cid(fixture["json"]) == fixture["cid"]


@needs_vectors
@pytest.mark.parametrize("fixture", _load("data-model-fixtures.json"))
def test_fixture_bytes_decode_back_to_the_json(fixture: dict[str, Any]) -> None:
    assert decode_dag_cbor(_b64(fixture["cbor_base64"])) == fixture["json"]


@needs_vectors
@pytest.mark.parametrize("case", _load("data-model-valid.json"))
def test_valid_data_model_values_encode_and_decode_back(case: dict[str, Any]) -> None:
    assert decode_dag_cbor(encode_dag_cbor(case["json"])) == case["json"]


@needs_vectors
@pytest.mark.parametrize("case", _load("data-model-invalid.json"))
def test_invalid_data_model_values_are_refused(case: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        encode_dag_cbor(case["json"])


def test_the_cid_does_not_depend_on_key_order() -> None:
    a = {"$type": "garden.engram.agents.handoff", "fromRun": "x", "toRun": "y"}
    b = {"toRun": "y", "fromRun": "x", "$type": "garden.engram.agents.handoff"}
    assert record_cid(a) == record_cid(b)
    assert record_cid(a).startswith("bafyrei")


def test_bytes_that_would_be_encoded_as_a_link_are_refused() -> None:
    raw = bytes.fromhex("01711220") + bytes(32)
    text = base64.b64encode(raw).decode()
    with pytest.raises(InvalidInputError, match="parse as a CID"):
        to_ipld({"b": {"$bytes": text}})
