"""Who signed an entry, judged here: git's allowed signers format, checked in process.

A handoff that arrives is the next agent's task, so each entry is checked once,
as it arrives, against the signers the team lists (``ssh-keygen(1)``, ALLOWED
SIGNERS: ``principals [options] keytype base64 [comment]``). Git's own verdict
(``git verify-commit``, ``%G?``) is not used, for two reasons:

- git asks ``ssh-keygen`` whether a key was valid at the **commit's own date**,
  which its writer chose: whoever holds a key past its ``valid-before`` can
  backdate a commit and git says good. Here a key is judged at the time this
  machine first saw the entry (``at``), which no writer sets;
- git runs two ``ssh-keygen`` processes an entry (13–20 ms); the SSHSIG check
  here costs a fraction of a millisecond, so a machine joining a team verifies
  thousands of entries within a session start.

An SSHSIG (OpenSSH's ``PROTOCOL.sshsig``) signs ``"SSHSIG"``, the namespace, the
hash's name and the hash of the commit without its signature header. Keys of the
common kinds are checked with ``cryptography``; what needs more than a key (a
``cert-authority`` line, a security key's touch flags) is handed to ``ssh-keygen
-Y verify`` with the same time. A key revoked (a line of the route's revocation
file) is never trusted, whatever its entries claim about when they were made.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

from ..format.origin import UNVERIFIED
from .openpgp import OpenPgpKeys, is_openpgp

__all__ = [
    "OPENPGP",
    "AllowedSigners",
    "SignerLine",
    "Verdict",
    "fingerprint",
    "signed_payload",
    "still_listed",
    "verify_commit",
]

Why = Literal[
    "unsigned",
    "unknown_key",
    "revoked",
    "bad_signature",
    "expired",
    "not_for_git",
    "not_ssh",
    "claim_mismatch",
]


NAMESPACE = b"git"
_MAGIC = b"SSHSIG"
_BEGIN, _END = b"-----BEGIN SSH SIGNATURE-----", b"-----END SSH SIGNATURE-----"
MAX_SIGNATURE = 16_384
"""Bytes a signature header may hold: an RSA-16384 signature is well within it."""
_OPTIONS = frozenset({"cert-authority", "namespaces", "valid-after", "valid-before"})
_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What was found about one entry's signature."""

    verified: bool
    why: str | None = None
    """None when verified; else a key of ``WHY``."""
    key: str | None = None
    """The signing key's fingerprint (``SHA256:…``), where the entry carries one."""
    principal: str | None = None
    """Who the signers file says the key belongs to, where it lists it."""

    @property
    def words(self) -> str:
        return "verified" if self.verified else UNVERIFIED.get(self.why or "", self.why or "")


@dataclass(frozen=True, slots=True)
class SignerLine:
    """One line of an allowed signers file."""

    principals: tuple[str, ...]
    key_type: str
    key: bytes
    """The public key's wire form (what its base64 says)."""
    namespaces: tuple[str, ...] | None = None
    valid_after: float | None = None
    valid_before: float | None = None
    cert_authority: bool = False
    line: str = ""

    @property
    def principal(self) -> str:
        """The name views show for this signer: its first principal that is not a
        pattern, else its first."""
        plain = [p for p in self.principals if not any(c in p for c in "*?!")]
        return (plain or list(self.principals))[0]

    def names(self, email: str) -> bool:
        """Whether the line's principals take ``email`` (``!`` patterns refuse it)."""
        if any(p.startswith("!") and fnmatchcase(email, p[1:]) for p in self.principals):
            return False
        return any(not p.startswith("!") and fnmatchcase(email, p) for p in self.principals)

    def allows(self, namespace: str, at: float) -> Why | None:
        """Why this line does not vouch for a signature in ``namespace`` at ``at``."""
        if self.namespaces is not None and not any(
            fnmatchcase(namespace, n) for n in self.namespaces
        ):
            return "not_for_git"
        if self.valid_after is not None and at < self.valid_after:
            return "expired"
        if self.valid_before is not None and at >= self.valid_before:
            return "expired"
        return None


@dataclass(slots=True)
class AllowedSigners:
    """The keys a team lists, and the keys it revoked."""

    lines: list[SignerLine] = field(default_factory=list)
    revoked: set[bytes] = field(default_factory=set)
    source: str = ""
    """Where the list was read (a path), for messages."""
    text: str = ""
    """What was read (the list, then the revocations): its digest tells a changed list."""
    openpgp: OpenPgpKeys | None = None
    """The OpenPGP keys listed beside the file (``openpgp.py``), if any."""

    @classmethod
    def parse(
        cls, text: str, revoked: str = "", source: str = "", openpgp: bytes = b""
    ) -> AllowedSigners:
        """The lines of ``text`` (git's allowed signers format) and the public keys of
        ``revoked`` (one a line, as ``gpg.ssh.revocationFile`` takes them), and the
        OpenPGP keys ``openpgp`` holds. A line that does not parse is an error naming
        it: a list silently shorter would refuse a teammate, one silently longer would
        be worse."""
        keys = OpenPgpKeys(openpgp) if openpgp.strip() else None
        listed = "" if keys is None else "\0" + keys.digest
        out = cls(source=source, text=text + "\0" + revoked + listed, openpgp=keys)
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                out.lines.append(_parse_line(line))
            except ValueError as error:
                where = f"{source}:{number}" if source else f"line {number}"
                raise ValueError(f"{where}: {error}: {line[:80]}") from None
        for raw in revoked.splitlines():
            words = raw.split()
            if len(words) >= 2 and words[0] in _KEY_TYPES:
                out.revoked.add(_b64(words[1]))
        return out

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    def principals(self) -> list[str]:
        return list(dict.fromkeys(line.principal for line in self.lines))

    def lines_for(self, key: bytes) -> list[SignerLine]:
        return [line for line in self.lines if line.key == key and not line.cert_authority]


def still_listed(signers: AllowedSigners, key: str | None, author: str, at: float) -> bool:
    """Whether ``signers`` takes the key of fingerprint ``key`` for ``author`` (``Name
    <email>``) at ``at``, unrevoked: a verdict a checkpoint carries for an entry this
    machine cannot read counts only while so (``checkpoint_verdicts.py``)."""
    if key is None or any(fingerprint(k) == key for k in signers.revoked):
        return False
    email = author.rpartition("<")[2].rstrip(">").strip()
    if key.startswith(OPENPGP):
        found = None if signers.openpgp is None else signers.openpgp.keys().get(key[len(OPENPGP) :])
        return found is not None and not found.revoked and email.lower() in found.emails
    return any(
        not line.cert_authority
        and fingerprint(line.key) == key
        and line.allows(NAMESPACE.decode(), at) is None
        and line.names(email)
        for line in signers.lines
    )


def _by_gpgv(payload: bytes, armored: bytes, keys: OpenPgpKeys) -> Verdict:
    """An OpenPGP signature, checked against the team's OpenPGP keys (``openpgp.py``)."""
    email = _author_email(payload)
    why, primary = keys.check(payload, armored, email)
    key = None if primary is None else f"{OPENPGP}{primary}"
    return Verdict(why is None, why, key, email if why is None else None)


OPENPGP = "OPENPGP:"
"""How a verdict names an OpenPGP key: this, then its primary fingerprint."""


def fingerprint(key: bytes) -> str:
    """``SHA256:…`` as ``ssh-keygen -l`` prints it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key).digest()).decode().rstrip("=")


def signed_payload(raw: bytes, digits: int = 40) -> tuple[bytes, bytes] | None:
    """A commit object's text split into what was signed and its signature (the
    ``gpgsig`` header; ``gpgsig-sha256`` in a SHA-256 repository); None when unsigned.
    Both headers are left out of what was signed, as git leaves them out."""
    mine = b"gpgsig" if digits == 40 else b"gpgsig-sha256"
    head, sep, message = raw.partition(b"\n\n")
    kept: list[bytes] = []
    signature: list[bytes] = []
    inside: bytes | None = None
    for line in head.split(b"\n"):
        if inside is not None and line.startswith(b" "):
            if inside == mine:
                signature.append(line[1:])
            continue
        inside = None
        name = line.partition(b" ")[0]
        if name in (b"gpgsig", b"gpgsig-sha256"):
            inside = name
            if name == mine and not signature:
                signature.append(line[len(name) + 1 :])
            continue
        kept.append(line)
    if not signature:
        return None
    return b"\n".join(kept) + sep + message, b"\n".join(signature)


def verify_commit(
    raw: bytes, signers: AllowedSigners, at: float | None = None, digits: int = 40
) -> Verdict:
    """The verdict on one commit object (``git cat-file commit``'s bytes) at ``at``
    (default: now), against ``signers``. Whatever a hostile commit holds, this answers a
    verdict and never raises."""
    try:
        return _verify(raw, signers, time.time() if at is None else at, digits)
    except Exception:  # a key or signature no parser here takes: not a good signature
        return Verdict(False, "bad_signature")


def _verify(raw: bytes, signers: AllowedSigners, at: float, digits: int) -> Verdict:
    split = signed_payload(raw, digits)
    if split is None:
        return Verdict(False, "unsigned")
    payload, armored = split
    if len(armored) > MAX_SIGNATURE:
        return Verdict(False, "bad_signature")
    begin, end = armored.find(_BEGIN), armored.find(_END)
    if begin == -1 or end < begin:
        if signers.openpgp is None or not is_openpgp(armored):
            return Verdict(False, "not_ssh")
        return _by_gpgv(payload, armored, signers.openpgp)
    try:
        blob = base64.b64decode(b"".join(armored[begin + len(_BEGIN) : end].split()), validate=True)
        sig = _Sshsig.parse(blob)
    except ValueError:
        return Verdict(False, "bad_signature")
    key = fingerprint(sig.public_key)
    if sig.public_key in signers.revoked:
        return Verdict(False, "revoked", key)
    email = _author_email(payload)
    lines = signers.lines_for(sig.public_key)
    if not lines:
        if any(line.cert_authority for line in signers.lines) and sig.key_type.endswith(
            "-cert-v01@openssh.com"
        ):
            return _by_ssh_keygen(payload, armored, signers, at, key, email)
        return Verdict(False, "unknown_key", key)
    if sig.namespace != NAMESPACE:
        return Verdict(False, "not_for_git", key, lines[0].principal)
    if sig.key_type.startswith("sk-"):
        return _by_ssh_keygen(payload, armored, signers, at, key, email)
    if not sig.check(payload):
        return Verdict(False, "bad_signature", key, lines[0].principal)
    why: Why | None = "unknown_key"
    for line in lines:
        why = line.allows(NAMESPACE.decode(), at)
        if why is None:
            # The key is good; the commit must also name its owner as its author, or a
            # listed person could sign words and put them in a teammate's name.
            if not line.names(email):
                return Verdict(False, "claim_mismatch", key, line.principal)
            return Verdict(True, None, key, line.principal)
    return Verdict(False, why, key, lines[0].principal)


def _author_email(payload: bytes) -> str:
    for line in payload.partition(b"\n\n")[0].split(b"\n"):
        if line.startswith(b"author "):
            found = re.search(rb"<([^>]*)>", line)
            return "" if found is None else found.group(1).decode("utf-8", "replace")
    return ""


# -- the SSHSIG blob ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Sshsig:
    public_key: bytes
    namespace: bytes
    reserved: bytes
    hash_name: bytes
    sig_type: str
    signature: bytes

    @property
    def key_type(self) -> str:
        return _key_type(self.public_key)

    @classmethod
    def parse(cls, blob: bytes) -> _Sshsig:
        reader = _Reader(blob)
        if reader.take(6) != _MAGIC or reader.uint32() != 1:
            raise ValueError("not an SSHSIG of version 1")
        public_key, namespace, reserved, hash_name = (reader.string() for _ in range(4))
        sig = _Reader(reader.string())
        sig_type = sig.string().decode("ascii", "replace")
        return cls(public_key, namespace, reserved, hash_name, sig_type, sig.remaining())

    def check(self, message: bytes) -> bool:
        """Whether the signature is the key's over ``message``."""
        from cryptography.exceptions import InvalidSignature

        algorithm = {b"sha256": hashlib.sha256, b"sha512": hashlib.sha512}.get(self.hash_name)
        if algorithm is None:
            return False
        signed = (
            _MAGIC
            + _string(self.namespace)
            + _string(self.reserved)
            + _string(self.hash_name)
            + _string(algorithm(message).digest())
        )
        try:
            _check_key(self.public_key, self.sig_type, self.signature, signed)
        except (InvalidSignature, ValueError):
            return False
        return True


def _check_key(public_key: bytes, sig_type: str, signature: bytes, signed: bytes) -> None:
    """Raises unless ``signature`` (an SSH signature blob's contents) is ``public_key``'s
    over ``signed``."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key

    key_type = _Reader(public_key).string().decode("ascii", "replace")
    loaded = load_ssh_public_key(key_type.encode() + b" " + base64.b64encode(public_key))
    reader = _Reader(signature)
    if isinstance(loaded, ed25519.Ed25519PublicKey) and sig_type == "ssh-ed25519":
        loaded.verify(reader.string(), signed)
    elif isinstance(loaded, ec.EllipticCurvePublicKey) and sig_type == key_type:
        pair = _Reader(reader.string())
        r, s = pair.mpint(), pair.mpint()
        digest = {256: hashes.SHA256(), 384: hashes.SHA384(), 521: hashes.SHA512()}
        algorithm = digest.get(loaded.curve.key_size)
        if algorithm is None:
            raise ValueError("curve")
        loaded.verify(encode_dss_signature(r, s), signed, ec.ECDSA(algorithm))
    elif isinstance(loaded, rsa.RSAPublicKey) and sig_type in ("rsa-sha2-256", "rsa-sha2-512"):
        algorithm = hashes.SHA256() if sig_type == "rsa-sha2-256" else hashes.SHA512()
        loaded.verify(reader.string(), signed, padding.PKCS1v15(), algorithm)
    else:
        raise ValueError(f"a {sig_type} signature by a {key_type} key")


class _Reader:
    """SSH wire encoding: ``uint32`` lengths before every string."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def uint32(self) -> int:
        return int.from_bytes(self.take(4), "big")

    def string(self) -> bytes:
        return self.take(self.uint32())

    def mpint(self) -> int:
        return int.from_bytes(self.string(), "big", signed=True)

    def remaining(self) -> bytes:
        out = self.data[self.at :]
        self.at = len(self.data)
        return out


def _key_type(key: bytes) -> str:
    return _Reader(key).string().decode("ascii", "replace")


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise ValueError("its key is not base64") from None


# -- the allowed signers format -----------------------------------------------------


def _tokens(line: str) -> list[str]:
    """Words split on blanks, a double-quoted stretch kept whole (``namespaces="a b"``)."""
    out, word, quoted = [], "", False
    for char in line:
        if char == '"':
            quoted = not quoted
            word += char
        elif char in " \t" and not quoted:
            if word:
                out.append(word)
            word = ""
        else:
            word += char
    if quoted:
        raise ValueError("a quote is not closed")
    if word:
        out.append(word)
    return out


def _options(text: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for item in re.findall(r'(?:[^,"]|"[^"]*")+', text):
        name, eq, value = item.partition("=")
        out[name.strip().lower()] = value.strip().strip('"') if eq else None
    return out


def _date(text: str) -> float:
    """``YYYYMMDD[HHMM[SS]][Z]`` as ssh-keygen reads it (local time unless ``Z``)."""
    utc = text.endswith(("Z", "z"))
    digits = text.rstrip("Zz")
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    if len(digits) not in formats or not digits.isdigit():
        raise ValueError(f"the date {text!r} is not YYYYMMDD[HHMM[SS]][Z]")
    parsed = time.strptime(digits, formats[len(digits)])
    import calendar

    return float(calendar.timegm(parsed) if utc else time.mktime(parsed))


def _parse_line(line: str) -> SignerLine:
    words = _tokens(line)
    if len(words) < 3:
        raise ValueError("a line needs principals, a key type and a key")
    principals = tuple(p.strip() for p in words[0].strip('"').split(",") if p.strip())
    rest = words[1:]
    options: dict[str, str | None] = {}
    if not rest[0].startswith(("ssh-", "ecdsa-", "sk-")):  # not a key type: options
        options = _options(rest[0])
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise ValueError(
                f"the option {unknown[0]!r} is not one ssh-keygen knows "
                f"({', '.join(sorted(_OPTIONS))})"
            )
        rest = rest[1:]
    if len(rest) < 2 or rest[0] not in _KEY_TYPES:
        raise ValueError("no key type this release knows (ssh-ed25519, ecdsa-…, ssh-rsa, sk-…)")
    namespaces = options.get("namespaces")
    after, before = options.get("valid-after"), options.get("valid-before")
    return SignerLine(
        principals=principals,
        key_type=rest[0],
        key=_b64(rest[1]),
        namespaces=None if namespaces is None else tuple(namespaces.split(",")),
        valid_after=None if after is None else _date(after),
        valid_before=None if before is None else _date(before),
        cert_authority="cert-authority" in options,
        line=line,
    )


# -- what needs ssh-keygen ----------------------------------------------------------


def _by_ssh_keygen(
    payload: bytes, armored: bytes, signers: AllowedSigners, at: float, key: str, email: str
) -> Verdict:
    """A certificate or a security key's signature, checked by ``ssh-keygen -Y verify``
    for the commit's author, at the time this machine first saw it (13 ms: only for
    these)."""
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(at)) + "Z"
    with tempfile.TemporaryDirectory(prefix="amv-verify-") as folder:
        allowed, sig = Path(folder, "allowed"), Path(folder, "sig")
        allowed.write_text("\n".join(line.line for line in signers.lines) + "\n")
        sig.write_bytes(armored + b"\n")
        command = ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", email]
        command += ["-n", NAMESPACE.decode(), "-s", str(sig), f"-Overify-time={stamp}"]
        if not signers.revoked:
            good = _ssh_keygen_says(command, payload)
            return Verdict(True, None, key, email) if good else Verdict(False, "unknown_key", key)
        revoked = Path(folder, "revoked")  # a certificate's key or its authority
        revoked.write_text(
            "".join(f"{_key_type(k)} {base64.b64encode(k).decode()}\n" for k in signers.revoked)
        )
        if _ssh_keygen_says([*command, "-r", str(revoked)], payload):
            return Verdict(True, None, key, email)
        if _ssh_keygen_says(command, payload):  # good but for the revocation
            return Verdict(False, "revoked", key)
    return Verdict(False, "unknown_key", key)


def _ssh_keygen_says(command: list[str], payload: bytes) -> bool:
    try:
        done = subprocess.run(
            command,
            input=payload,
            capture_output=True,
            timeout=10,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
