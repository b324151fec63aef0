"""Entries signed with OpenPGP, checked against the OpenPGP keys a team lists.

Git's allowed signers format names SSH keys only. A team whose people sign their
commits with gpg (``gpg.format`` openpgp) lists their public keys beside it, in a
file of the same name and ``.gpg`` (``gpg --export --armor KEY…``, armored or not),
reviewed where the list is. A signature is checked with ``gpgv`` against those keys
alone, in a home of its own, so nothing the person's own keyring or trust database
says counts: a key is listed or it is not. The key must carry a user ID with the
commit author's email, or the signature is ``claim_mismatch``; a key whose
revocation the file holds is ``revoked``, an expired one ``expired`` (as ``gpgv``
judges them now, when the entry arrives).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OpenPgpKeys", "is_openpgp"]

_BEGIN = b"-----BEGIN PGP SIGNATURE-----"
_EMAIL = re.compile(r"<([^<>]+)>\s*$")
_TIMEOUT = 10.0
_FAILED = ("BADSIG", "ERRSIG", "EXPSIG", "EXPKEYSIG", "REVKEYSIG")


def is_openpgp(armored: bytes) -> bool:
    return armored.lstrip().startswith(_BEGIN)


@dataclass(frozen=True, slots=True)
class Key:
    """One listed OpenPGP key: its primary fingerprint and the emails of its user IDs."""

    fingerprint: str
    emails: frozenset[str]
    revoked: bool


class OpenPgpKeys:
    """The OpenPGP keys a team lists (the bytes of its ``.gpg`` file), read once a process
    for each content (the list is read again for every sync; gpg is asked only when it
    changed)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.digest = hashlib.sha256(data).hexdigest()[:16]

    def keys(self) -> dict[str, Key]:
        """Each listed key by its primary fingerprint ({} where ``gpg`` reads none)."""
        return self._read()[1]

    def _read(self) -> tuple[bytes, dict[str, Key]]:
        """The keys as a keyring ``gpgv`` takes (not armored), and each listed key."""
        known = _known.get(self.digest)
        if known is None:
            with _home() as home:
                armored = b"-----BEGIN" in self.data
                keyring = _gpg(home, ["--dearmor"], self.data) if armored else self.data
                listed = _listed(_gpg(home, ["--show-keys", "--with-colons"], self.data))
            known = _known[self.digest] = (keyring, listed)
        return known

    def check(self, payload: bytes, armored: bytes, email: str) -> tuple[str | None, str | None]:
        """(why it is not verified or None, the key's fingerprint) for one signature of
        ``payload`` by the author of address ``email``."""
        with _home() as home:
            keyring = home / "listed.gpg"
            keyring.write_bytes(self._read()[0])
            signature = home / "signature.asc"
            signature.write_bytes(armored + b"\n")
            done = subprocess.run(
                ["gpgv", "--keyring", str(keyring), "--status-fd", "1", str(signature), "-"],
                input=payload,
                capture_output=True,
                env=_env(home),
                timeout=_TIMEOUT,
            )
        said = {
            words[1]: words[2:]
            for line in done.stdout.decode("utf-8", "replace").splitlines()
            if (words := line.split())[:1] == ["[GNUPG:]"] and len(words) > 1
        }
        primary = said.get("VALIDSIG", [None])[-1]
        if "NO_PUBKEY" in said:
            return "unknown_key", None
        if "REVKEYSIG" in said:
            return "revoked", primary
        if "EXPKEYSIG" in said or "EXPSIG" in said:
            return "expired", primary
        if "GOODSIG" not in said or primary is None or any(k in said for k in _FAILED):
            return "bad_signature", primary
        key = self.keys().get(primary)
        if key is None:
            return "unknown_key", primary
        if key.revoked:
            return "revoked", primary
        if email.lower() not in key.emails:
            return "claim_mismatch", primary
        return None, primary


_known: dict[str, tuple[bytes, dict[str, Key]]] = {}


class _home:
    """A GnuPG home of its own for one question, gone after it."""

    def __enter__(self) -> Path:
        self._folder = tempfile.TemporaryDirectory(prefix="amv-gpgv-")
        home = Path(self._folder.name)
        home.chmod(0o700)
        return home

    def __exit__(self, *_exc: object) -> None:
        self._folder.cleanup()


def _env(home: Path) -> dict[str, str]:
    """gpg's environment: a home of its own, messages in English, and nothing else of
    this process's (no agent, no user's keyring)."""
    return {"GNUPGHOME": str(home), "PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C"}


def _gpg(home: Path, args: list[str], data: bytes) -> bytes:
    done = subprocess.run(
        ["gpg", "--batch", "--no-tty", "--homedir", str(home), *args],
        input=data,
        capture_output=True,
        env=_env(home),
        timeout=_TIMEOUT,
    )
    return done.stdout


def _listed(colons: bytes) -> dict[str, Key]:
    """Keys from ``gpg --show-keys --with-colons``: each primary fingerprint, its user
    IDs' emails (revoked user IDs left out), and whether the key itself is revoked."""
    out: dict[str, Key] = {}
    fingerprint: str | None = None
    emails: set[str] = set()
    revoked = False
    primary_next = False

    def done() -> None:
        if fingerprint is not None:
            out[fingerprint] = Key(fingerprint, frozenset(emails), revoked)

    for line in colons.decode("utf-8", "replace").splitlines():
        fields = line.split(":")
        kind = fields[0]
        if kind == "pub":
            done()
            fingerprint, emails, revoked, primary_next = None, set(), fields[1] == "r", True
        elif kind == "fpr" and primary_next and len(fields) > 9:
            fingerprint, primary_next = fields[9], False
        elif kind == "sub":
            primary_next = False
        elif kind == "uid" and len(fields) > 9 and fields[1] != "r":
            found = _EMAIL.search(fields[9])
            if found:
                emails.add(found.group(1).lower())
    done()
    return out
