"""Publishing an agent's handoff records to an AT Protocol repository.

Each record goes to the repository of the logged-in account under its own key
(the new run's TID), at most once: the PDS client decides after any failure
whether the record is ours, another run's, or not there (see
``agent_mem_vault.atproto.pds``). What happened is stored in
``runs.published`` (key ``<did>/<agent>/<rkey>``) with ``insert``, so a record
published once is not sent again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..core import tracing
from .models import HandoffEntry
from .records import check_handoff_record
from .registry import RunRegistry

if TYPE_CHECKING:
    from ..atproto.pds import PdsClient

__all__ = ["PUBLISHED", "Published", "publish_handoffs"]

PUBLISHED = "runs.published"


@dataclass(frozen=True, slots=True)
class Published:
    """One handoff record and where it stands in the repository."""

    entry: HandoffEntry
    outcome: Literal["created", "already_published", "taken"]
    """``taken``: the repository holds a different record under this key."""
    uri: str
    cid: str
    """CID of the record in the repository (another writer's when ``taken``)."""
    validation_status: str | None = None
    """The PDS's ``validationStatus`` when it was written: ``valid`` or ``unknown``."""

    @property
    def ours(self) -> str:
        """CID of our record."""
        return self.entry.cid


async def publish_handoffs(
    registry: RunRegistry,
    client: PdsClient,
    agent: str,
    *,
    mode: Literal["create", "put"] = "create",
    validate: bool | None = None,
) -> list[Published]:
    """Publish every handoff record of ``agent`` not yet published to this repository.

    Stops at the first record that could not be written (``PublishFailed``):
    the ones before it are recorded, and running it again is safe.
    """
    if client.session is None:
        from ..core.errors import UnauthenticatedError

        raise UnauthenticatedError("log in to the PDS before publishing")
    did = client.session.did
    out: list[Published] = []
    for entry in await registry.handoffs(agent):
        key = f"{did}/{agent}/{entry.rkey}"
        known = await registry.store.get(PUBLISHED, key)
        if known is not None:
            v = known.value
            out.append(
                Published(
                    entry,
                    "already_published" if v["outcome"] != "taken" else "taken",
                    v["uri"],
                    v["cid"],
                    v.get("validationStatus"),
                )
            )
            continue
        with tracing.span(
            "runs.publish_handoff",
            {
                "agent_mem_vault.runs.agent": agent,
                "agent_mem_vault.runs.rkey": entry.rkey,
                "agent_mem_vault.runs.publish.mode": mode,
            },
            kind="client",
        ) as span:
            result = await client.publish(
                entry.record, entry.rkey, mode=mode, check=check_handoff_record, validate=validate
            )
            span.set_attribute("agent_mem_vault.runs.publish.outcome", result.outcome)
        value = {
            "outcome": result.outcome,
            "uri": result.uri,
            "cid": result.cid,
            "pds": client.base_url,
            "validationStatus": result.validation_status,
        }
        await registry.store.insert(PUBLISHED, key, value)
        out.append(
            Published(entry, result.outcome, result.uri, result.cid, result.validation_status)
        )
    return out
