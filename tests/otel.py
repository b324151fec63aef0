"""An in-memory span exporter for the tests that read spans; other tests trace nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the dev extra installs the OpenTelemetry SDK")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_mem_vault.core import tracing

_PROVIDER = TracerProvider()
_EXPORTER = InMemorySpanExporter()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """The spans finished during the test; after it, tracing and text capture are as before.

    The provider is given to this package only (not set globally, which can be
    done once per process), so no other test records spans or stores trace ids.
    """
    tracing.use_tracer_provider(_PROVIDER)
    _EXPORTER.clear()
    try:
        yield _EXPORTER
    finally:
        tracing.use_tracer_provider(None)
        tracing.capture_message_text(False)
