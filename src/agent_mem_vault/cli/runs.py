"""``agent-mem-vault runs``: one run of an agent at a time, and its handoff records.

Each command parses its options, makes one call on ``RunsHome`` (the runs
service) under ``asyncio.run`` and prints the result. Runs live in a SQLite
file, by default ``<vault>/.runs/runs.sqlite3`` (``--store`` to
choose another); each handoff record is also a note in the vault under
``agents/<agent>/runs/``. Errors propagate to ``cli/main.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.words import counted
from .options import choice_option, emit_json, vault_option

if TYPE_CHECKING:
    from ..runs.models import AgentStatus, HandoffEntry, RunState
    from ..runs.service import RunsHome

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


def _home_options(func: _F) -> _F:
    func = click.option(
        "--store",
        "store_path",
        envvar="AGENT_MEM_VAULT_RUNS_STORE",
        metavar="PATH",
        help="SQLite file holding the runs (default: <vault>/.runs/runs.sqlite3).",
    )(func)
    # The vault shows each handoff record as a note.
    return vault_option(func)


def _json_option(func: _F) -> _F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def _home(vault_path: str, store_path: str | None, *, writes: bool = False) -> RunsHome:
    """Where the runs are; the vault, which shows their notes, must be one (a command
    that ``writes`` makes the default vault on first use)."""
    from ..runs.service import RunsHome
    from .options import open_vault

    open_vault(vault_path).require(make_default=writes)
    return RunsHome.at(vault_path, store_path)


def _run(coro: Coroutine[Any, Any, _T]) -> _T:
    import asyncio  # here, not at the top: `agent-mem-vault --help` imports this module

    return asyncio.run(coro)


def _echo_each(
    items: Sequence[_T], as_json: bool, to_json: Callable[[_T], Any], line: Callable[[_T], str]
) -> None:
    """What a runs command prints of its records: a JSON list for scripts, else a line each."""
    if as_json:
        emit_json([to_json(item) for item in items])
        return
    for item in items:
        click.echo(line(item))


@click.group("runs")
def runs() -> None:
    """Runs of agents: one current run each; AT Protocol handoff records.

    \b
    Starting a run takes the agent over. The replaced run writes a
    garden.engram.agents.handoff record keyed by the new run's TID, at most
    once (or the registry writes it once the replaced run's lease lapsed).
    """


@runs.command("start")
@click.argument("agent")
@click.option(
    "--lease",
    "lease_seconds",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds the run counts as alive without a heartbeat (default 30).",
)
@click.option(
    "--pid",
    type=click.IntRange(min=1),
    default=None,
    help="The process doing the run (default: the shell or program that called this "
    "command). Once it has ended, a takeover writes this run's record at once.",
)
@click.option("--generator-name", help="The software doing the run (default agent-mem-vault).")
@click.option("--generator-version", help="Its version (with --generator-name).")
@click.option("--generator-url", help="Where to learn about it (optional).")
@_home_options
def start(
    agent: str,
    lease_seconds: float | None,
    pid: int | None,
    generator_name: str | None,
    generator_version: str | None,
    generator_url: str | None,
    vault_path: str,
    store_path: str | None,
) -> None:
    """Start a run of AGENT, taking it over; prints the new run's TID.

    \b
      RUN=$(agent-mem-vault runs start support-bot)
    """
    from ..runs import Generator

    generator = None
    if generator_name or generator_version or generator_url:
        if not (generator_name and generator_version):
            raise click.UsageError("--generator-name and --generator-version go together")
        generator = Generator(generator_name, generator_version, generator_url)
    home = _home(vault_path, store_path, writes=True)
    import os

    owner = (
        pid if pid is not None else os.getppid()
    )  # this command ends at once; its caller runs on
    click.echo(_run(home.start(agent, generator=generator, lease_seconds=lease_seconds, pid=owner)))


@runs.command("stop")
@click.argument("agent")
@click.argument("run", required=False)
@_home_options
def stop(agent: str, run: str | None, vault_path: str, store_path: str | None) -> None:
    """Stop RUN of AGENT (default: its current run) on purpose; prints the run's TID.

    \b
    The next `runs start AGENT` then writes the stopped run's handoff record at
    once, instead of after its lease lapses:
      agent-mem-vault runs stop support-bot "$RUN"
    """
    click.echo(_run(_home(vault_path, store_path, writes=True).stop(agent, run)))


@runs.command("status")
@click.argument("agent", required=False)
@_home_options
@_json_option
def status(agent: str | None, vault_path: str, store_path: str | None, as_json: bool) -> None:
    """Show the current run of AGENT (or of every agent), and whether it is alive."""
    results = _run(_home(vault_path, store_path).status(agent))
    if not results and not as_json:
        click.echo("no runs yet: start one with `agent-mem-vault runs start AGENT`")
    _echo_each(results, as_json, lambda s: s.to_json(), _status_line)


def _status_line(s: AgentStatus) -> str:
    cur = s.current
    state = "none" if cur is None else f"{cur.info.run} ({'alive' if cur.alive else 'lapsed'})"
    line = f"{s.agent}: current {state}, {counted(s.runs, 'run')}, {counted(s.handoffs, 'handoff')}"
    if s.pending:
        line += f", awaiting handoff from {', '.join(s.pending)}"
    return line


def _records_command(
    name: str, to_json: Callable[[_T], Any], line: Callable[[_T], str]
) -> Callable[[Callable[[RunsHome, str], Coroutine[Any, Any, list[_T]]]], click.Command]:
    """``@_records_command(name, to_json, line)`` over ``def list_(home, agent)``: the
    command ``runs NAME AGENT`` that makes this one call on the runs and prints the
    records it returns as :func:`_echo_each` does. The function's docstring is the
    command's help."""

    def command(call: Callable[[RunsHome, str], Coroutine[Any, Any, list[_T]]]) -> click.Command:
        @runs.command(name, help=call.__doc__)
        @click.argument("agent")
        @_home_options
        @_json_option
        def run(agent: str, vault_path: str, store_path: str | None, as_json: bool) -> None:
            _echo_each(_run(call(_home(vault_path, store_path), agent)), as_json, to_json, line)

        return run

    return command


def _run_json(s: RunState) -> dict[str, Any]:
    return {
        **s.info.to_json(),
        "state": s.state,
        "alive": s.alive,
        "takenOverBy": s.taken_over_by,
        "handoffWritten": s.handoff_written,
    }


def _run_line(s: RunState) -> str:
    if s.state == "current":
        fate = "current" + (" (alive)" if s.alive else " (lapsed)")
    else:
        fate = f"taken over by {s.taken_over_by}" + (
            "" if s.handoff_written else " (handoff pending)"
        )
    return f"{s.info.run}  {s.info.started_at}  {fate}"


@_records_command("list", _run_json, _run_line)
def list_(home: RunsHome, agent: str) -> Coroutine[Any, Any, list[RunState]]:
    """List every run of AGENT, oldest first, with what became of it."""
    return home.list_runs(agent)


def _entry_json(e: HandoffEntry) -> dict[str, Any]:
    return {"rkey": e.rkey, "cid": e.cid, "writtenBy": e.written_by, "record": e.record}


def _entry_line(e: HandoffEntry) -> str:
    return f"{e.record['fromRun']} -> {e.record['toRun']}  {e.record['createdAt']}  {e.cid}"


@_records_command("handoffs", _entry_json, _entry_line)
def handoffs(home: RunsHome, agent: str) -> Coroutine[Any, Any, list[HandoffEntry]]:
    """List AGENT's handoff records (fromRun → toRun)."""
    return home.handoffs(agent)


@runs.command("export")
@click.argument("agent")
@_home_options
def export(agent: str, vault_path: str, store_path: str | None) -> None:
    """Print AGENT's handoff records as AT Protocol JSON, one per line."""
    for record in _run(_home(vault_path, store_path).export(agent)):
        click.echo(json.dumps(record, ensure_ascii=False, separators=(",", ":")))


@runs.command("publish")
@click.argument("agent")
@click.option(
    "--pds",
    envvar="AGENT_MEM_VAULT_PDS",
    required=True,
    help="PDS base URL (env AGENT_MEM_VAULT_PDS).",
)
@click.option(
    "--identifier",
    envvar="AGENT_MEM_VAULT_PDS_IDENTIFIER",
    required=True,
    help="Handle or DID of the account (env AGENT_MEM_VAULT_PDS_IDENTIFIER).",
)
@click.option(
    "--password",
    envvar="AGENT_MEM_VAULT_PDS_PASSWORD",
    required=True,
    help="An app password (env AGENT_MEM_VAULT_PDS_PASSWORD; prefer the variable).",
)
@choice_option(
    "--mode",
    choices=["create", "put"],
    help="createRecord with the key, or putRecord with swapRecord null.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=15.0,
    show_default=True,
    help="Seconds to wait for each answer of the PDS.",
)
@click.option(
    "--validate",
    is_flag=True,
    help="Ask the PDS to validate each record against its lexicon (fails on a PDS that "
    "does not know garden.engram.agents.handoff; see docs/runs.md).",
)
@click.option(
    "--wait",
    is_flag=True,
    help="First wait until no handoff record is pending (the stopped runs' leases lapse).",
)
@_home_options
@_json_option
def publish(
    agent: str,
    pds: str,
    identifier: str,
    password: str,
    mode: str,
    timeout: float,
    validate: bool,
    wait: bool,
    vault_path: str,
    store_path: str | None,
    as_json: bool,
) -> None:
    """Publish AGENT's handoff records to an AT Protocol repository, each at most once.

    \b
    Lists on stderr the records still pending (runs taken over that have not
    written theirs) and when each will be written; --wait waits for them.
    Exits 4 (conflict) if the repository holds another record under one of
    our keys ("taken"), naming our CID and theirs.
    """
    home = _home(vault_path, store_path, writes=True)
    if wait:
        _run(home.wait_for_pending(agent))
    results = _run(
        home.publish(
            agent,
            pds=pds,
            identifier=identifier,
            password=password,
            mode="put" if mode == "put" else "create",
            pds_timeout=timeout,
            validate=True if validate else None,
        )
    )
    pending = _run(home.pending(agent))
    _echo_each(
        results,
        as_json,
        lambda p: {
            "rkey": p.entry.rkey,
            "outcome": p.outcome,
            "uri": p.uri,
            "cid": p.cid,
            "ours": p.ours,
            "validationStatus": p.validation_status,
        },
        lambda p: (
            f"{p.outcome:<18} {p.uri}  {p.cid}"
            + (f"  validationStatus={p.validation_status}" if p.validation_status else "")
        ),
    )
    for r in pending:
        when = (
            f"when its lease lapses at {r.lease_expires_at.isoformat(timespec='seconds')}"
            if r.lease_expires_at
            else "on the next command"
        )
        click.echo(
            f"pending: run {r.info.run} was taken over by {r.taken_over_by}; its handoff "
            f"record is written when it writes it, is stopped (`runs stop {agent} "
            f"{r.info.run}`), or {when}; then publish again (or use --wait)",
            err=True,
        )
    taken = [p for p in results if p.outcome == "taken"]
    if taken:
        from ..core.errors import ConflictError

        for p in taken:
            click.echo(
                f"taken: {p.uri} holds another record: ours {p.ours}, theirs {p.cid}", err=True
            )
        raise ConflictError(
            f"{counted(len(taken), 'record')} of {agent!r} "
            f"{'is' if len(taken) == 1 else 'are'} taken: the repository holds another "
            "record under our key (see above); nothing was overwritten",
            code="record_taken",
            rkeys=[p.entry.rkey for p in taken],
        )
