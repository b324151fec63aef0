"""Schemathesis fuzzes the API from its own OpenAPI document: no 500s, answers as documented.

The app runs as a real ``agent-mem-vault demo support`` process; each
operation gets a bounded number of generated requests, valid ones and invalid
ones (negative mode), signed in as the operator. The SSE route is left out: a
valid thread would stream forever; its bad inputs are in test_bad_requests.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.result import Err, Ok
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    missing_required_header,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from agent_mem_vault.server.json_body import MAX_INT_DIGITS
from agent_mem_vault.server.openapi import openapi_document
from tests.server.support import OLGA, demo_process

pytestmark = pytest.mark.slow

EXAMPLES = 20
# Invalid input may also be too large: 413 rejects it as rightly as a 400 does.
REJECTIONS = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "429"]
# The API refuses NUL in any string (400 invalid_string: PostgreSQL cannot store
# it), so NUL is no "valid" input to generate; tests/server/test_hostile_json.py
# sends it and checks the refusal.
CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {"negative_data_rejection": {"expected-statuses": REJECTIONS}},
        "generation": {"allow-x00": False},
    }
)


def _long_int(value: Any) -> bool:
    """Whether ``value`` holds an integer the API refuses (``number_out_of_range``).

    JSON Schema cannot say "integers of at most 20 digits" for a free-form
    ``value``, so such bodies are no valid input to generate;
    tests/server/test_bad_requests.py sends them and checks the refusal.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            if len(str(abs(item))) > MAX_INT_DIGITS:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


BUFFER = 8 * 1024
"""The most elements Hypothesis draws into one string or list."""


def _generable(node: Any) -> Any:
    """The document without the length limits Hypothesis cannot generate past.

    Hypothesis draws no string or list longer than its buffer (8,192 elements):
    the negative mode's "one past ``maxLength``" of a 100,000-character text
    would stop the test with ``InvalidArgument``, whichever seed drew it, and no
    valid input comes near such a limit. tests/server/test_bad_requests.py
    sends text one character past each of them and checks the refusal.
    """
    if isinstance(node, dict):
        return {
            key: _generable(value)
            for key, value in node.items()
            if not (key in ("maxLength", "maxItems") and isinstance(value, int) and value > BUFFER)
        }
    if isinstance(node, list):
        return [_generable(item) for item in node]
    return node


SCHEMA = schemathesis.openapi.from_dict(
    _generable(openapi_document(title="fuzz", harness_keys=["desk", "billing"])), config=CONFIG
).exclude(path_regex=r"/events$")


def _operation(result: Ok[APIOperation[Any, Any, Any, Any]] | Err[InvalidSchema]) -> Any:
    """The operation, or the schema's own error (a document schemathesis cannot read)."""
    if isinstance(result, Err):
        raise result.err()
    return result.ok()


OPERATIONS = [_operation(result) for result in SCHEMA.get_all_operations()]
# Routes without any input have no invalid requests to generate.
NO_INPUT = {"GET /api/me", "GET /api/harnesses"}
RUNS = [
    (op, mode)
    for op in OPERATIONS
    for mode in ("positive", "negative")
    if mode == "positive" or op.label not in NO_INPUT
]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,  # invalid input is a 4xx
    positive_data_acceptance,  # valid input is not a 400
    missing_required_header,
    unsupported_method,
    ignored_auth,  # without the login the answer is 401
]


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db: Path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    with demo_process(db) as (url, _):
        yield url


@pytest.mark.parametrize(
    ("operation", "mode"), RUNS, ids=[f"{op.label} {mode}" for op, mode in RUNS]
)
def test_api_answers_generated_requests_as_documented(
    demo_url: str, operation: Any, mode: str
) -> None:
    strategy = operation.as_strategy(generation_mode=schemathesis.GenerationMode(mode))
    if mode == "positive":
        strategy = strategy.filter(lambda case: not _long_int(case.body))

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        # Explore anew on every local run; in CI replay one fixed sample, so
        # a submission is judged on its code, not on the luck of the draw.
        derandomize=bool(os.environ.get("CI")),
    )
    def run(case: Any) -> None:
        case.call_and_validate(base_url=demo_url, headers=OLGA, checks=CHECKS, timeout=30)

    run()


BODY_OPERATIONS = [op for op in OPERATIONS if op.body]
# Deeper than Python's recursion limit once parsed; schemathesis generates nothing like it.
DEEP_LEVELS = 1_100


def _deep(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return {"text": "x", "value": value}


@pytest.mark.parametrize("operation", BODY_OPERATIONS, ids=[op.label for op in BODY_OPERATIONS])
def test_api_refuses_deeply_nested_bodies_as_documented(demo_url: str, operation: Any) -> None:
    params = {"harness": "desk", "threadId": "case-42", "waitId": "w1"}
    case = operation.Case(
        path_parameters={k: v for k, v in params.items() if f"{{{k}}}" in operation.path},
        body=_deep(DEEP_LEVELS),
        media_type="application/json",
    )
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # for schemathesis to serialize the body; the server has its own
    try:
        response = case.call(base_url=demo_url, headers=OLGA, timeout=30)
    finally:
        sys.setrecursionlimit(limit)
    assert (response.status_code, response.json()["code"]) == (400, "body_too_deep")
    case.validate_response(
        response,
        checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
    )
