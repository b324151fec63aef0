"""What the vault commands share: the ``--vault`` and ``--namespace`` options, opening
the vault, and printing (JSON for scripts, text and tables for people).

Imported by every command module (vault, memories, sync, agents, runs); it
imports no vault code at import time, so ``--help`` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.words import counted

if TYPE_CHECKING:
    from ..vault import Handoff, Memory, Vault
    from ..vault.format.models import Origin

DEFAULT_VAULT = "~/agent-mem-vault"
"""``vault.base.DEFAULT_VAULT``, spelled out here so that ``--help`` imports no vault code."""
_F = TypeVar("_F", bound=Callable[..., Any])


VAULT_ENV = "AGENT_MEM_VAULT"


def checked_vault(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse an empty ``--vault`` or ``$AGENT_MEM_VAULT``: an empty path is the
    current folder, which would quietly become (or be read as) the vault."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            "is empty; give the vault's folder, e.g. --vault ~/agent-mem-vault", param=param
        )
    source = ctx.get_parameter_source(param.name) if param.name else None
    if source is click.core.ParameterSource.DEFAULT and os.environ.get(VAULT_ENV) == "":
        raise click.UsageError(
            f"{VAULT_ENV} is set but empty; unset it for the default vault "
            f"({DEFAULT_VAULT}) or set it to the vault's folder",
            ctx=ctx,
        )
    return value


vault_option = click.option(
    "--vault",
    "vault_path",
    envvar=VAULT_ENV,
    default=DEFAULT_VAULT,
    show_default=True,
    metavar="PATH",
    type=click.Path(file_okay=False),
    callback=checked_vault,
    help="The vault folder (or set AGENT_MEM_VAULT).",
)
"""``--vault PATH``: the one definition, shared by every command that opens a vault."""


def vault_options(func: _F) -> _F:
    """``--vault`` and ``--json``, on every vault command."""
    func = click.option(
        "--json", "as_json", is_flag=True, help="Print JSON for scripts instead of text."
    )(func)
    return vault_option(func)


def namespace_option(required: bool = True) -> Callable[[_F], _F]:
    """``--namespace/-n``: when it is not given, ``found_namespace`` finds it from the
    working directory, as the session hook and the MCP server do."""
    found = "found from git (or .agent-mem-vault.toml) when omitted"
    return click.option(
        "--namespace",
        "-n",
        metavar="NS",
        help=f"Path-like namespace, e.g. project/harbor-api; {found}"
        + ("." if required else ", else every namespace."),
    )


agent_namespace_option = click.option(
    "--namespace",
    default=None,
    help="Namespace to use; default: found from the working directory "
    "(.agent-mem-vault.toml, else the git repository's name).",
)
"""``--namespace`` of the commands an agent's client runs (serve, the hooks): no ``-n``."""


all_namespaces_option = click.option(
    "--all-namespaces",
    "-A",
    "everywhere",
    is_flag=True,
    help="Every namespace, even inside a repository (whose own is the default).",
)


def found_namespace(
    given: str | None, *, required: bool = True, everywhere: bool = False
) -> str | None:
    """``given``, else the namespace of the working directory, found the way the session
    hook and the MCP server find it (``.agent-mem-vault.toml``, else the git
    repository's name); the one found is said on standard error, so a person knows
    which was used. Outside a repository: a usage error when ``required``, else None
    (every namespace), as with ``everywhere``."""
    if given or everywhere:
        return given or None
    from pathlib import Path

    from ..integrations.namespace import CONFIG_FILE, discover_namespace, find_repo_root

    here = Path.cwd()
    namespace = discover_namespace(here)
    if namespace is None:
        if required:
            raise click.UsageError(
                "Missing option '--namespace' / '-n': not inside a git repository (nor "
                f"under a {CONFIG_FILE}) here, so there is no default; pass one such as "
                "-n project/harbor-api"
            )
        return None
    root = find_repo_root(here) or here
    source = root / CONFIG_FILE if (root / CONFIG_FILE).is_file() else f"the git repository {root}"
    more = "" if required else "; --all-namespaces for every namespace"
    click.echo(f"namespace: {namespace} (from {source}{more})", err=True)
    return namespace


def choice_option(*names: str, choices: Sequence[str], help: str) -> Callable[[_F], _F]:
    """An option that takes one word of ``choices``, the first by default (``--help``
    shows it): every such option lists its default first."""
    return click.option(
        *names, type=click.Choice(choices), default=choices[0], show_default=True, help=help
    )


offset_option = click.option(
    "--offset",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Skip this many (the next page starts where the last one ended).",
)


def echo_page_note(shown: int, total: int, offset: int, next_offset: int | None, what: str) -> None:
    """After a table: how many there are in all, and the --offset of the next page."""
    if next_offset is None and offset == 0:
        return
    line = f"Showing {offset + 1}-{offset + shown} of {counted(total, what)}"
    if next_offset is None:
        click.echo(line + ".")
    else:
        click.echo(line + f"; the next page: --offset {next_offset}")


def open_vault(path: str) -> Vault:
    """The vault at ``--vault PATH`` (imported lazily: ``--help`` stays fast)."""
    from ..vault import Vault
    from ..vault.folder.files import lock_timeout_setting

    return Vault(path, lock_timeout=lock_timeout_setting())


def echo_view_line(vault: Vault, namespace: str | None) -> None:
    """Before a view of pending handoffs: what the remote has, if the vault travels and
    the syncer did not just fetch it; a line on standard error when this machine's
    notes are shown without it (the remote did not answer) and how old they are."""
    line = vault.catch_up(namespace, doing="this shows")
    if line:
        click.echo(line, err=True)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def emit(value: Any, as_json: bool, text: Callable[[Any], str]) -> None:
    """What a command that changes or shows one note prints: with ``--json`` the
    value's ``to_dict``, else the line ``text`` makes of it."""
    if as_json:
        emit_json(value.to_dict())
    else:
        click.echo(text(value))


private_option = click.option(
    "--private",
    is_flag=True,
    help="Keep the note on this machine: it never goes to the vault's remote "
    "(the note says private: true; remove that line to send it).",
)


HELD_BACK_EXIT = 10
"""The exit status of a write whose note was saved here and stays off its remote: neither
a failure to retry (it would write the note twice) nor a plain success to overlook."""


def tell_held_back(vault: Vault, path: str) -> None:
    """After a write: if the note stays on this machine (a secret in it), say why and what
    to do on stderr, and exit ``HELD_BACK_EXIT``; what was printed before stands."""
    line = vault.held_back(path)
    if line is not None:
        click.echo(f"agent-mem-vault: {line}", err=True)
        sys.exit(HELD_BACK_EXIT)


def id_command(
    text: Callable[[Any], str], name: str | None = None
) -> Callable[[Callable[[Vault, str], object]], click.Command]:
    """``@id_command(text)`` over ``def ack(vault, id) -> Handoff``: the command ``ack ID``
    (with ``--vault`` and ``--json``) that makes this one call on the vault and prints
    its answer as :func:`emit` does. The function's docstring is the command's help;
    ``name`` is the command's when it is not the function's."""

    def command(call: Callable[[Vault, str], object]) -> click.Command:
        @click.command(name or call.__name__, help=call.__doc__)
        @click.argument("id")
        @vault_options
        def run(id: str, vault_path: str, as_json: bool) -> None:
            emit(call(open_vault(vault_path), id), as_json, text)

        return run

    return command


def read_text(value: str) -> str:
    """``-`` means: read the text from standard input."""
    return sys.stdin.read() if value == "-" else value


def memory_text(m: Memory) -> str:
    """One memory as ``memory get`` and ``show`` print it: its properties, then its text."""
    head = _properties(
        [
            ("id", m.id),
            ("namespace", m.namespace),
            ("kind", m.kind),
            ("status", m.status),
            ("created_at", m.created_at),
            ("agent", m.agent or None),
            ("tags", ", ".join(m.tags) or None),
            ("supersedes", ", ".join(m.supersedes) or None),
            ("superseded_by", m.superseded_by or None),
            ("forgotten_at", m.forgotten_at or None),
            ("path", m.path),
            *_writer_pairs(m.origin),
        ]
    )
    return f"{head}\n\n# {m.title}\n\n{m.content}"


def handoff_text(h: Handoff) -> str:
    """One handoff as ``show`` prints it: its properties, then its note's text."""
    head = _properties(
        [
            ("id", h.id),
            ("namespace", h.namespace),
            ("from", h.sender),
            ("to", h.recipient or "*"),  # a handoff to any agent
            ("status", h.status),
            ("created_at", h.created_at),
            ("read_at", h.read_at or None),
            ("supersedes", ", ".join(h.supersedes) or None),
            ("superseded_by", h.superseded_by or None),
            ("path", h.path),
            *_writer_pairs(h.origin),
        ]
    )
    return f"{head}\n\n{h.text}"


def note_text(note: Handoff | Memory) -> str:
    """A handoff or a memory as ``show`` prints it."""
    from ..vault.format.models import Memory as _Memory

    return memory_text(note) if isinstance(note, _Memory) else handoff_text(note)


def _writer_pairs(origin: Origin | None) -> list[tuple[str, object]]:
    """Who wrote the note's text, as ``show`` prints it (nothing where nobody is known)."""
    if origin is None:
        return []
    return [
        ("written_by", origin.author or "(git named nobody)"),
        ("written_on", origin.machine),
        ("verified", _verdict(origin)),
    ]


def with_writer(origin: Origin | None, text: str, *, always: bool = True) -> str:
    """A table cell: ``text`` after who wrote it (``always``, or where flagged). The flag
    comes first: a long cell is cut at the table's edge, never the flag."""
    if origin is None or not (always or origin.flag):
        return text
    flag = f"{origin.flag}: " if origin.flag else ""
    return f"[{flag}by {origin.who}] {text}"


def _verdict(origin: Origin) -> str:
    from ..vault.format.origin import UNVERIFIED

    if not origin.sent:
        return "not sent yet"
    if origin.verified is None:
        return "not checked"
    if not origin.verified:
        vouched = f"; vouched for by {origin.vouched}" if origin.vouched else ""
        return f"no: {UNVERIFIED.get(origin.why or '', origin.why)}{vouched}"
    earlier = f" (earlier text by {origin.earlier}: not verified)" if origin.earlier else ""
    return f"yes, signed by {origin.signer}{earlier}"


def _properties(pairs: Sequence[tuple[str, object]]) -> str:
    """``name: value`` lines, the values in one column; a property that is None is left
    out."""
    return "\n".join(f"{name + ':':<15}{value}" for name, value in pairs if value is not None)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, width: int = 100) -> str:
    """A plain text table; the last column is cut to keep lines within ``width``."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    room = max(20, width - sum(widths[:-1]) - 2 * (len(headers) - 1))
    out = []
    for row in [list(headers), *[list(r) for r in rows]]:
        last = " ".join(row[-1].split())
        if len(last) > room:
            last = last[: room - 1] + "…"
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [last]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def short_time(stamp: str) -> str:
    return stamp[:16].replace("T", " ") if stamp else ""
