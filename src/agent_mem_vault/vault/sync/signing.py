"""Signed like the person's own commits: what a route sends carries their signature.

A handoff is the next agent's task, so a team wants to check who sent it. Where
the person's git signs their commits (``commit.gpgsign`` with ``gpg.format``
ssh, openpgp or x509 and ``user.signingkey``, read for the route as git reads
them), or where the route was told to (``agent-mem-vault sync init --sign``:
``Route.sign``), every entry and checkpoint a route sends is signed the same
way. ``commit-tree`` ignores ``commit.gpgsign``, so ``-S`` is passed here; the
person's git config is never written.

Signing never waits for a person. The syncer runs with nobody at a terminal,
and a hook must not hang: the signing program gets no terminal (its own
session, stdin ``/dev/null``), ``SSH_ASKPASS_REQUIRE=never`` (``ssh-keygen``
would otherwise start an askpass window), gpg runs with ``--batch
--pinentry-mode error``, and it has ``SIGN_WAIT`` seconds. A key that cannot
sign without a person (a passphrase and no agent, a key the agent lacks, a
hardware key not touched, a gpg key locked) holds the push back: nothing is
sent unsigned and nothing with another key. The write stays committed here,
and is sent once the key can sign again (``ssh-add``, then the syncer's next
try or ``agent-mem-vault sync``). The reason and its fix are in the route's
state (``signing``), for ``sync --status``, ``doctor`` and each write's answer.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import UnavailableError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from .gitcmd import Git
    from .routes import Route

__all__ = [
    "HELD_KEYS",
    "HELD_MARK",
    "SIGN_WAIT",
    "Signer",
    "SigningHeld",
    "commit_signed",
    "git_settings",
    "held_line",
    "key_label",
    "signer_for",
]

SIGN_WAIT = 5.0
"""Seconds a signature may take before the signing program is killed and the push
held back (``AGENT_MEM_VAULT_SIGN_WAIT``): a hardware key waiting for a touch, a
program that hangs."""
WAIT_ENV = "AGENT_MEM_VAULT_SIGN_WAIT"
HELD_KEYS = ("state", "key", "why", "fix")
"""What a ``SigningHeld`` tells (its details), kept in the route's state as ``signing``."""
HELD_MARK = "signing-held"
"""A file in the sync folder while some route's key cannot sign: a write asks the
route's state why only when it is there (one ``stat`` a write otherwise)."""
ASK_EVERY = 60.0
_WRAPPER = "gpg-batch"
_SETTINGS = (
    r"^(commit\.gpgsign|gpg\.format|user\.signingkey|gpg\.program|gpg\.openpgp\.program"
    r"|gpg\.x509\.program)$"
)
_known: dict[tuple[str, str], tuple[float, Signer | None]] = {}


class SigningHeld(UnavailableError, code="signing_held"):
    """This machine signs what it sends, and its key cannot sign now without a person."""


@dataclass(frozen=True, slots=True)
class Signer:
    """How a route's commits are signed: git's ``gpg.format`` and the key, as the person's
    git config or the route says."""

    format: str
    """``ssh``, ``openpgp`` or ``x509``."""
    key: str | None
    """``user.signingkey`` (a key file, ``key::`` and a public key, a gpg key id), or
    None: git finds one (``gpg.ssh.defaultKeyCommand``; the committer's gpg key)."""
    program: str | None = None
    """The person's signing program for this format, when they named one."""

    def settings(self, sync_dir: Path) -> list[str]:
        """``-c`` pairs for the ``git commit-tree -S`` that signs."""
        out = [f"gpg.format={self.format}"]
        if self.key:
            out.append(f"user.signingkey={self.key}")
        if self.format in ("openpgp", "x509"):
            out.append(f"gpg.{self.format}.program={_wrapper(sync_dir)}")
        return [a for item in out for a in ("-c", item)]

    def env(self) -> dict[str, str]:
        """What the signing program runs with: it never asks anyone."""
        env = {"SSH_ASKPASS_REQUIRE": "never", "GIT_TERMINAL_PROMPT": "0"}
        if self.format in ("openpgp", "x509"):
            env["AMV_SIGN_PROGRAM"] = self.program or ("gpgsm" if self.format == "x509" else "gpg")
        return env

    @property
    def label(self) -> str:
        """The key as messages name it: ``ssh-ed25519 SHA256:…`` when it can be read."""
        if self.key is None:
            return f"the {self.format} key git finds for this route"
        return key_label(self.key) if self.format == "ssh" else f"{self.format} key {self.key}"


def signer_for(git_dir: Path, route: Route) -> Signer | None:
    """How the commits ``route`` sends are signed, or None: unsigned (neither the route nor
    the person's git asks for signing). Asked once a minute per route and process."""
    cache = (str(git_dir), route.sign or "")
    now = time.monotonic()
    known = _known.get(cache)
    if known is not None and now - known[0] < ASK_EVERY:
        return known[1]
    found = _ask(git_dir, route)
    _known[cache] = (now, found)
    return found


def _ask(git_dir: Path, route: Route) -> Signer | None:
    if route.sign:
        return Signer("ssh", route.sign)
    settings = git_settings(git_dir)
    if settings.get("commit.gpgsign", "").lower() not in ("true", "yes", "on", "1"):
        return None
    fmt = settings.get("gpg.format", "openpgp").lower()
    program = settings.get(f"gpg.{fmt}.program") or (
        settings.get("gpg.program") if fmt == "openpgp" else None
    )
    return Signer(fmt, settings.get("user.signingkey") or None, program=program)


def git_settings(git_dir: Path | None, pattern: str = _SETTINGS) -> dict[str, str]:
    """The person's settings for commits in ``git_dir`` (None: their global ones) whose
    names match ``pattern`` (default: how they sign), as git reads them (one ``git
    config``)."""
    import subprocess

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")
    }
    env["LC_ALL"] = "C"
    if git_dir is not None:
        env["GIT_DIR"] = str(git_dir)
    try:
        done = subprocess.run(
            ["git", "config", "-z", "--get-regexp", pattern],
            env=env,
            capture_output=True,
            timeout=10,
            cwd="/",
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    settings: dict[str, str] = {}
    for item in done.stdout.decode("utf-8", "replace").split("\0"):
        name, _, value = item.partition("\n")
        if name:
            settings[name.lower()] = value  # the last one wins, as in git
    return settings


def commit_signed(
    git: Git,
    signer: Signer,
    sync_dir: Path,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
) -> str:
    """``git commit-tree -S ARGS`` signed by ``signer``; ``SigningHeld`` (its details say
    why, and the fix) if the key could not sign without a person."""
    if signer.format == "ssh":
        return _signed(git, signer, sync_dir, args, env, None)
    import tempfile

    # gpg's own words, which git keeps back ("gpg failed to sign the data"): the wrapper
    # copies them here.
    with tempfile.NamedTemporaryFile(prefix="agent-mem-vault-gpg-", suffix=".log") as log:
        return _signed(git, signer, sync_dir, args, env, Path(log.name))


def _signed(
    git: Git,
    signer: Signer,
    sync_dir: Path,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    log: Path | None,
) -> str:
    limit = _wait()
    extra = {} if log is None else {"AMV_SIGN_LOG": str(log)}
    try:
        result = git.run(
            *signer.settings(sync_dir),
            "commit-tree",
            "-S",
            *args,
            timeout=limit,
            check=False,
            env={**(env or {}), **signer.env(), **extra},
        )
    except TimeoutError:
        raise _held(signer, "timeout", f"did not sign within {limit:g} s") from None
    if result.status == 0:
        return result.out.decode("ascii").strip()
    said = "" if log is None else log.read_text(encoding="utf-8", errors="replace")
    raise _held(signer, *_why(signer, f"{said}\n{result.err}"))


def _wait() -> float:
    try:
        value = float(os.environ.get(WAIT_ENV, "") or SIGN_WAIT)
    except ValueError:
        return SIGN_WAIT
    return value if value > 0 else SIGN_WAIT


def _why(signer: Signer, err: str) -> tuple[str, str]:
    """What stopped the signature (a state and its words), from the signing program's own
    message."""
    said = err.lower()
    if "needs to be configured" in said or "no secret key" in said:
        return "no_key", "has no key to sign with"
    if "incorrect passphrase" in said or "enter passphrase" in said:
        return "needs_passphrase", "needs its passphrase, and no ssh-agent holds it"
    if "no private key found" in said:
        return "not_in_agent", "is not in the ssh-agent"
    if "confirm user presence" in said or (signer.key or "").startswith(("sk-", "key::sk-")):
        return "needs_touch", "waits for a touch"
    if signer.format != "ssh" and ("pinentry" in said or "failure sign" in said):
        return "needs_pin", "is locked and needs its PIN or passphrase"
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    last = (lines or ["the signing program failed"])[-1]
    return "failed", f"could not sign ({last.removeprefix('error: ').removeprefix('fatal: ')})"


def _fix(signer: Signer, state: str) -> str:
    """What a person does so the key signs again."""
    private = _private_file(signer.key)
    if state == "no_key":
        return "agent-mem-vault sync init --sign names a key you have"
    if state in ("needs_passphrase", "not_in_agent"):
        start = "" if os.environ.get("SSH_AUTH_SOCK") else 'eval "$(ssh-agent)" && '
        return f"{start}ssh-add {private or '<the key file>'}"
    if state == "needs_touch":
        return "run 'agent-mem-vault sync' at the key and touch it"
    if state == "needs_pin":
        return "unlock it once (echo | gpg --clearsign), then run 'agent-mem-vault sync'"
    if state == "timeout":
        return "the signing program did not answer; check it, then run 'agent-mem-vault sync'"
    return "check the key, then run 'agent-mem-vault sync'"


def _held(signer: Signer, state: str, why: str) -> SigningHeld:
    """The error for a signature that did not come; its details (``state``, ``key``,
    ``why``, ``fix``) are what the route's state keeps and ``sync --status`` shows."""
    fix = _fix(signer, state)
    return SigningHeld(
        f"this machine signs what it sends, and its key {signer.label} {why}; {fix}; "
        "the change stays here and goes out once the key can sign",
        code="signing_held",
        state=state,
        key=signer.label,
        why=why,
        fix=fix,
    )


def held_line(record: Mapping[str, Any]) -> str:
    """One line for a write made while its route's key cannot sign."""
    return (
        f"held back on this machine: it is saved here, and goes out signed once the key can "
        f"sign: the key {record.get('key')} {record.get('why')}; {record.get('fix')}"
    )


def key_label(key: str) -> str:
    """``ssh-ed25519 SHA256:…`` for an SSH key given as git takes one (a key file, its
    ``.pub`` beside it, or ``key::`` and the public key); the key as given otherwise."""
    line = key.removeprefix("key::") if key.startswith("key::") else _public_line(key)
    fields = (line or "").split()
    if len(fields) >= 2:
        try:
            blob = base64.b64decode(fields[1], validate=True)
        except ValueError:
            return key
        digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
        return f"{fields[0]} SHA256:{digest}"
    return key


def _public_line(key: str) -> str | None:
    path = Path(key).expanduser()
    for candidate in (path, path.with_name(path.name + ".pub")):
        try:
            text = candidate.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if text.startswith(("ssh-", "ecdsa-", "sk-")):
            return text.splitlines()[0]
    return None


def _private_file(key: str | None) -> str | None:
    """The private key file of an SSH key given as a path (what ``ssh-add`` takes)."""
    if not key or key.startswith("key::"):
        return None
    path = Path(key).expanduser()
    if path.suffix == ".pub" and path.with_suffix("").exists():
        return str(path.with_suffix(""))
    return str(path)


def _wrapper(sync_dir: Path) -> Path:
    """A gpg that never asks: the person's gpg (or gpgsm), batch, no pinentry."""
    path = sync_dir / _WRAPPER
    body = (
        "#!/bin/sh\n"
        "# agent-mem-vault: a signature in the background never waits for a PIN; what gpg\n"
        "# says is kept for the message (git keeps only 'gpg failed to sign the data').\n"
        'log="${AMV_SIGN_LOG:-/dev/null}"\n'
        '"${AMV_SIGN_PROGRAM:-gpg}" --batch --pinentry-mode error "$@" 2>"$log"\n'
        "status=$?\n"
        'cat "$log" >&2\n'
        "exit $status\n"
    )
    try:
        if path.read_text(encoding="utf-8") == body:
            return path
    except OSError:
        pass
    from ..folder.files import atomic_write

    atomic_write(path, body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# -- choosing a key (``sync init --sign``) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Chosen:
    """The SSH key a route will sign with, tried once."""

    key: str
    """As ``user.signingkey`` takes it: a key file, or ``key::`` and the public key."""
    public: str
    """The public key line (``ssh-ed25519 AAAA… comment``)."""

    @property
    def label(self) -> str:
        return key_label(self.key)

    def signers_line(self, principal: str) -> str:
        """The key's line for a team's allowed signers file (git's format)."""
        kind, blob = self.public.split()[:2]
        return f'{principal} namespaces="git" {kind} {blob}'


def choose_key(key: str | None, git_dir: Path | None) -> Chosen:
    """The key to sign with: ``key`` (a file, or ``key::…``); else the person's
    ``user.signingkey`` when their ``gpg.format`` is ssh; else the first key of the
    ssh-agent that needs no touch; else ``~/.ssh/id_ed25519``, ``id_ecdsa``, ``id_rsa``.
    Tried at once (a signature of a few bytes): ``SigningHeld`` naming the fix when it
    cannot sign without a person, so nothing is saved that would hold every write."""
    from ...core.errors import NotFoundError

    candidates: list[str] = []
    if key:
        candidates.append(key if key.startswith("key::") else str(Path(key).expanduser()))
    else:
        mine = git_settings(git_dir)
        if mine.get("gpg.format", "").lower() == "ssh" and mine.get("user.signingkey"):
            candidates.append(mine["user.signingkey"])
        candidates += [f"key::{line}" for line in _agent_keys() if not line.startswith("sk-")]
        ssh = Path.home() / ".ssh"
        candidates += [str(ssh / n) for n in ("id_ed25519", "id_ecdsa", "id_rsa")]
    for candidate in candidates:
        public = (
            candidate.removeprefix("key::") if candidate.startswith("key::") else None
        ) or _public_line(candidate)
        if public is None or len(public.split()) < 2:
            if key:
                raise NotFoundError(
                    f"{key} is not an SSH key file with its .pub beside it, nor key:: and a "
                    "public key; name the key you sign with (--key ~/.ssh/id_ed25519)",
                    code="no_signing_key",
                )
            continue
        _probe(candidate, public)
        return Chosen(candidate, public)
    raise NotFoundError(
        "no SSH key to sign with: none was named, git names none (user.signingkey), the "
        "ssh-agent holds none and ~/.ssh has no id_ed25519, id_ecdsa or id_rsa; make one "
        "(ssh-keygen -t ed25519), or name yours with --key PATH",
        code="no_signing_key",
    )


def _agent_keys() -> list[str]:
    import subprocess

    if not os.environ.get("SSH_AUTH_SOCK"):
        return []
    try:
        done = subprocess.run(
            ["ssh-add", "-L"], capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def _probe(key: str, public: str) -> None:
    """Sign a few bytes with ``key`` as git would, with nobody to ask."""
    import subprocess
    import tempfile

    signer = Signer("ssh", key)
    with tempfile.TemporaryDirectory(prefix="agent-mem-vault-sign-") as folder:
        if key.startswith("key::"):
            pub = Path(folder) / "key.pub"
            pub.write_text(public + "\n", encoding="utf-8")
            argv = ["ssh-keygen", "-Y", "sign", "-n", "git", "-f", str(pub), "-U"]
        else:
            argv = ["ssh-keygen", "-Y", "sign", "-n", "git", "-f", key]
        limit = _wait()
        try:
            done = subprocess.run(
                argv,
                input=b"agent-mem-vault\n",
                capture_output=True,
                timeout=limit,
                env={**os.environ, **signer.env()},
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            raise _held(signer, "timeout", f"did not sign within {limit:g} s") from None
        except OSError as exc:
            raise _held(signer, "failed", f"could not sign ({exc.strerror})") from None
    if done.returncode != 0:
        raise _held(signer, *_why(signer, done.stderr.decode("utf-8", "replace")))
