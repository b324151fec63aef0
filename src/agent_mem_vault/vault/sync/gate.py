"""What must not leave the machine: a secret a note gained here is held back from its remote.

An agent pastes a connection string into a handoff, a command's output with an
API key lands in a memory: committed and pushed, the secret would sit in the
team's remote and its history for good. So before a note's text goes into a
commit that a remote will see, its secrets are looked for (``core/secrets.py``),
and a secret counts only when the note gained it here: one the remote already
has (in the version this machine last fetched or committed) is not leaving.

A held note stays on disk as the person or agent wrote it; the commit keeps the
version the remote may already have (or none), so nothing of the new text is
sent, and it goes out at the first commit after the secret is gone
(``agent-mem-vault redact``). The route's state names each held note, for
``sync --status`` and ``doctor``.

A note whose front matter says ``private: true`` is held back the same way, its
secrets or none: a version that says so never goes out (a note made private
after it travelled keeps, on the remote, the version it had before).

A finding that is no secret (an example key in a how-to, a test fixture) is let
go by a person at a terminal (``agent-mem-vault secrets allow``): the
fingerprint of that value in that note is kept in ``allowed.json`` in the sync
folder. It stays on this machine and never travels, so no writer elsewhere can
forge it, and no MCP tool writes it; a new secret in the same note is held again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from ...core.clock import format_datetime, utc_now
from ...core.errors import ConflictError, NotFoundError
from ..folder.files import atomic_write
from ..format.notes import PRIVATE, parse_note
from .privacy import UNSEND, matching, patterns
from .routes import SYNC_DIR

if TYPE_CHECKING:
    from ...core.secrets import Finding
    from .local import LocalRoute

__all__ = [
    "ALLOWED",
    "Held",
    "allow_secret",
    "allowed_here",
    "gated_notes",
    "gated_tree",
    "held_notes",
    "held_text",
    "mask",
    "new_secrets",
    "said",
    "suspect",
]

_CLEAN: set[str] = set()
"""Blobs this process found free of secrets: a note judged once is not read again."""
_CLEAN_MAX = 200_000
PRIVATE_KIND = "private note"
"""The ``kind`` of what holds a note marked ``private: true``."""
ALLOWED = "allowed.json"
"""In the sync folder: the findings a person let go (``allow_secret``)."""


def find_secrets(text: str) -> list[Finding]:
    """``core.secrets.find_secrets``, its shapes compiled on first use: a process that only
    reads (a session start) never pays for them."""
    from ...core.secrets import find_secrets as find

    return find(text)


@dataclass(frozen=True, slots=True)
class Held:
    """One secret that keeps a note on this machine."""

    kind: str
    line: int
    masked: str
    """The secret with its middle left out, enough for a person to know which it is."""

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "line": self.line, "masked": self.masked}

    @classmethod
    def from_dict(cls, data: object) -> Held | None:
        if not isinstance(data, dict):
            return None
        kind, line, masked = data.get("kind"), data.get("line"), data.get("masked")
        if isinstance(kind, str) and isinstance(line, int) and isinstance(masked, str):
            return cls(kind, line, masked)
        return None


def mask(secret: str) -> str:
    """``AKIA…MPLE (20 chars)``: the ends of a long secret, never more than a fifth of it."""
    keep = min(4, len(secret) // 5)
    if keep == 0:
        return f"… ({len(secret)} chars)"
    return f"{secret[:keep]}…{secret[-keep:]} ({len(secret)} chars)"


def fingerprint(secret: str) -> str:
    """What ``allowed.json`` keeps of an allowed value: enough to know it again, not it."""
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def new_secrets(text: str, before: Iterable[str], allowed: Collection[str] = ()) -> list[Held]:
    """The secrets in ``text`` that none of the texts in ``before`` holds (the versions a
    remote has or may have) and a person did not allow (fingerprints): what a commit of
    ``text`` would send for the first time."""
    found: list[Finding] = find_secrets(text)
    if not found:
        return []
    earlier = [t for t in before if t]
    out = []
    for finding in found:
        secret = text[finding.start : finding.end]
        if any(secret in old for old in earlier) or (allowed and fingerprint(secret) in allowed):
            continue
        out.append(Held(finding.kind, finding.line, mask(secret)))
    return out


def said(path: str, held: list[Held], label: str) -> str:
    """One line for whoever wrote the note: which line holds what, and what to do."""
    first = held[0]
    if first.kind == PRIVATE_KIND and first.line == 0:
        return (
            f"held back on this machine: {path} is private ({first.masked}); it stays here "
            f"and does not go to {label} while the pattern is set"
        )
    if first.kind == PRIVATE_KIND:
        return (
            f"held back on this machine: {path} is private (line {first.line}: "
            f"{first.masked}); it stays here and does not go to {label} while it says so"
        )
    more = f" (and {len(held) - 1} more)" if len(held) > 1 else ""
    return (
        f"held back on this machine: line {first.line} of {path} holds what looks like "
        f"a secret ({first.kind}: {first.masked}){more}; the note is saved here and does not go "
        f"to {label} until the secret is gone: 'agent-mem-vault redact {path}' replaces "
        f"it in place (a person who knows it is no secret: 'agent-mem-vault secrets allow "
        f"{path} --line {first.line}')"
    )


@overload
def gated_tree(
    route: LocalRoute, tree: str, base: str | None, *keep: str | None, index: Literal[True] = True
) -> str: ...


@overload
def gated_tree(
    route: LocalRoute, tree: str, base: str | None, *keep: str | None, index: Literal[False]
) -> str | None: ...


def gated_tree(
    route: LocalRoute, tree: str, base: str | None, *keep: str | None, index: bool = True
) -> str | None:
    """``tree`` (the route's index) with each note it changed since ``base`` that gained
    a secret here set back to its version in the first of the trees ``keep`` that has
    one (left out where none has), in the index too; the notes held go into the
    route's state. ``index=False``: ``tree`` is not the index's (a commit made from
    disk, ``LocalRoute.commit``), and None says a note is held: commit from the index."""
    moved = {p: new for p, (_old, new) in route.changes(base, tree).items() if new is not None}
    by_setting = _private_by_setting(route.root, moved)
    changed = {p: blob for p, blob in moved.items() if blob not in _CLEAN and p not in by_setting}
    if not changed and not by_setting:
        if moved:  # a held note may have gone out since: its record goes
            _record(route, {}, judged=moved)
        return tree
    texts = route.blobs(sorted(set(changed.values()))) if changed else {}
    suspects = {p: texts[b] for p, b in changed.items() if b in texts and suspect(texts[b])}
    if len(_CLEAN) > _CLEAN_MAX:
        _CLEAN.clear()
    _CLEAN.update(b for p, b in changed.items() if p not in suspects)
    held = {**_judge(route, suspects, [base, *keep, _fetched_tree(route)]), **by_setting}
    _record(route, held, judged=moved)
    if not held:
        return tree
    if not index:
        return None
    # A private note whose person asked it off the remote is left out, not kept.
    dropped = _unsend(route, held)
    kept: dict[str, str] = {}
    for source in keep:
        for path, blob in route.entries(source, sorted(set(held) - set(kept) - dropped)).items():
            kept.setdefault(path, blob)
    zero = "0" * len(tree)
    lines = [f"100644 {kept[p]}\t{p}\0" if p in kept else f"0 {zero}\t{p}\0" for p in sorted(held)]
    route.git.run("update-index", "-z", "--index-info", input="".join(lines).encode())
    return route.git.text("write-tree")


def gated_notes(route: LocalRoute, paths: list[str], local_tree: str | None) -> list[str]:
    """The notes of a claim's commit (``LocalRoute.commit_notes``, from disk) that may go
    to the remote: one that gained a secret here and that the remote never had stays
    out (nobody else can take it); one it had cannot be claimed through the remote
    until the secret is gone (``held_back``)."""
    suspects = {}
    by_setting = _private_by_setting(route.root, paths)
    for path in paths:
        try:
            text = (route.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if suspect(text) and path not in by_setting:
            suspects[path] = text
    if not suspects and not by_setting:
        return paths
    held = {**_judge(route, suspects, [local_tree, _fetched_tree(route)]), **by_setting}
    _record(route, held, judged=suspects)
    sent_before = sorted(route.entries(local_tree, sorted(held)))
    if sent_before:
        path = sent_before[0]
        raise ConflictError(
            f"the read was not taken: {said(path, held[path], route.route.label)}; the remote "
            "has an earlier version of this handoff, and a read counts only once the remote "
            "has it",
            code="held_back",
        )
    return [p for p in paths if p not in held]


def held_text(route: LocalRoute, path: str, text: str) -> str | None:
    """Why ``text``, written at ``path``, stays on this machine (``said``), for whoever
    wrote it to act on; None if it may go to the remote, or stays because it is
    private, as its writer asked."""
    held = _judge(route, {path: text}, [route.local_tree(), _fetched_tree(route)])
    if not held or held[path][0].kind == PRIVATE_KIND:
        return None
    return said(path, held[path], route.route.label)


def held_notes(route: LocalRoute) -> dict[str, list[Held]]:
    """The notes of ``route`` held back on this machine, as its last commit judged them;
    one whose secrets have gone from its file since (edited, not committed yet) is left
    out, as the next commit will send it."""
    record = route.state().get("held")
    if not isinstance(record, dict):
        return {}
    settings = patterns(route.root)
    out = {}
    for path, value in sorted(record.items()):
        found = value.get("found") if isinstance(value, dict) else None
        items = [h for h in map(Held.from_dict, found or []) if h is not None]
        try:
            text = (route.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if items and (suspect(text) or (items[0].line == 0 and matching(settings, path))):
            out[path] = items
    return out


def private_line(text: str) -> int | None:
    """The line of ``private: true`` in the front matter of a note's ``text``, or None when
    the note is not private (the substring test first: nearly every note is not)."""
    if f"{PRIVATE}:" not in text:
        return None
    note = parse_note(text)
    if note is None or note.meta.get(PRIVATE) is not True:
        return None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(f"{PRIVATE}:"):
            return number
    return 1


def suspect(text: str) -> bool:
    """Whether a note's ``text`` may have to stay here (private, or a secret's shape in
    it): the cheap first look, before any earlier version is read."""
    return private_line(text) is not None or bool(find_secrets(text))


def _private_by_setting(root: Path, paths: Iterable[str]) -> dict[str, list[Held]]:
    """The notes among ``paths`` a private pattern keeps here (``privacy.py``): each held
    as a note that says ``private: true`` is, its line 0 (a setting, not a line)."""
    settings = patterns(root)
    if not settings:
        return {}
    out = {}
    for path in paths:
        pattern = matching(settings, path)
        if pattern is not None:
            out[path] = [Held(PRIVATE_KIND, 0, f"the pattern {pattern}")]
    return out


def _unsend(route: LocalRoute, held: dict[str, list[Held]]) -> set[str]:
    """The private notes among ``held`` to take off the remote (``UNSEND`` in the route's
    state: ``agent-mem-vault private ID --remove-from-remote``); done once, so the
    request goes."""
    state = route.state()
    asked = state.get(UNSEND)
    if not isinstance(asked, list):
        return set()
    now = {p for p in asked if p in held and held[p][0].kind == PRIVATE_KIND}
    if now:
        rest = [p for p in asked if p not in now]
        if rest:
            state[UNSEND] = rest
        else:
            state.pop(UNSEND, None)
        route.save_state(state)
    return now


def _fetched_tree(route: LocalRoute) -> str | None:
    fetched = route.heads()[1]
    return None if fetched is None else route.fetched_tree(fetched)


def _judge(
    route: LocalRoute, suspects: dict[str, str], trees: Sequence[str | None]
) -> dict[str, list[Held]]:
    """Which of ``suspects`` (path → its new text) hold a secret that the versions of
    the same path in ``trees`` lack."""
    if not suspects:
        return {}
    where = [t for t in dict.fromkeys(trees) if t]
    earlier = route.blobs([f"{t}:{p}" for p in suspects for t in where])
    allowed = allowed_here(route.root)
    held = {}
    for path, text in suspects.items():
        line = private_line(text)
        if line is not None:
            held[path] = [Held(PRIVATE_KIND, line, "private: true")]
            continue
        olds = [earlier.get(f"{t}:{path}", "") for t in where]
        found = new_secrets(text, olds, allowed.get(path, ()))
        if found:
            held[path] = found
    return held


def _record(route: LocalRoute, held: dict[str, list[Held]], *, judged: Iterable[str]) -> None:
    """The route's state names the notes held back now: those judged here that hold a
    secret, and the earlier ones not judged again that are still on disk."""
    state = route.state()
    before = state.get("held")
    record = dict(before) if isinstance(before, dict) else {}
    for path in judged:
        record.pop(path, None)
    now = format_datetime(utc_now())
    for path, found in held.items():
        record[path] = {"since": now, "found": [f.to_dict() for f in found]}
    record = {p: v for p, v in record.items() if (route.root / p).is_file()}
    if record != (before if isinstance(before, dict) else {}):
        state["held"] = record
        route.save_state(state)


def allowed_here(root: Path) -> dict[str, set[str]]:
    """The fingerprints a person allowed, by note ({} when none, or the file is
    unreadable: then the findings are held again, which loses nothing)."""
    try:
        entries = json.loads((root / SYNC_DIR / ALLOWED).read_bytes())
    except (OSError, ValueError):
        return {}
    out: dict[str, set[str]] = {}
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict):
            path, digest = entry.get("path"), entry.get("fingerprint")
            if isinstance(path, str) and isinstance(digest, str):
                out.setdefault(path, set()).add(digest)
    return out


def secrets_on_line(text: str, line: int, kind: str | None) -> list[tuple[Finding, str]]:
    """The findings on ``line`` of ``text`` (of ``kind`` if given), with their values."""
    return [
        (f, text[f.start : f.end])
        for f in find_secrets(text)
        if f.line == line and (kind is None or f.kind == kind)
    ]


def allow_secret(root: Path, path: str, text: str, line: int, kind: str | None) -> list[Held]:
    """Let the findings on ``line`` of the note at ``path`` (whose text is ``text``) go to
    the remote: their fingerprints join ``allowed.json``. The caller checked that a
    person asked (``secrets allow``); nothing found there is an error that says what is."""
    found = secrets_on_line(text, line, kind)
    if not found:
        there = sorted({(f.line, f.kind) for f in find_secrets(text)})
        listed = "; ".join(f"line {n}: {k}" for n, k in there) or "none in this note"
        raise NotFoundError(
            f"no secret{' of kind ' + repr(kind) if kind else ''} on line {line} of {path} "
            f"(what looks like one: {listed})",
            code="secret_not_found",
        )
    file = root / SYNC_DIR / ALLOWED
    try:
        entries = json.loads(file.read_bytes())
    except (OSError, ValueError):
        entries = []
    if not isinstance(entries, list):
        entries = []
    now = format_datetime(utc_now())
    known = {(e.get("path"), e.get("fingerprint")) for e in entries if isinstance(e, dict)}
    for finding, value in found:
        digest = fingerprint(value)
        if (path, digest) not in known:
            entries.append({"path": path, "kind": finding.kind, "fingerprint": digest, "at": now})
    atomic_write(file, json.dumps(entries, indent=1) + "\n")
    return [Held(f.kind, f.line, mask(value)) for f, value in found]
