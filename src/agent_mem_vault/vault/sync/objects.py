"""Git objects written and read in this process, in git's loose format.

A claim writes a blob, a few trees and two commits, and reads the trees along one
note's path. Asked of git, each is a process of its own (2–6 ms, nearly all of it
starting git), and on a busy machine those processes are most of what a claim
costs. A loose object is git's simplest stored form, and a stable one:
``objects/ab/cdef…`` holding ``<kind> <size>\\0<data>`` compressed with zlib, named
by the hash of those bytes. So the plain case is done here, as git does it (a
temporary file in the object's folder, linked to its name, read-only), and git is
asked for everything else:

- a repository whose settings change how objects are stored or named
  (``core.sharedRepository``, a second object format, ``i18n.commitEncoding``) or
  whose blobs git would filter (a ``.gitattributes``, ``core.attributesFile``):
  ``Objects.plain`` is False there, and every caller runs git as before;
- an object that is not loose (packed by a fetch or by ``git gc``): ``read`` says
  None, and the caller asks git.

Git checks what it writes; here the trees are worked out by ``trees.py`` and the
commits by ``commit`` below, from parts that git wrote or that this module did, and
the tests read every object back with ``git fsck``. An object is flushed to disk
before it is linked where git's settings would have git flush it (``core.fsync``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .gitcmd import Git

__all__ = ["Objects", "object_id"]

_SETTINGS = (
    r"^(core\.(sharedrepository|compression|loosecompression|attributesfile|fsync"
    r"|fsyncobjectfiles)|extensions\.(objectformat|compatobjectformat)|i18n\.commitencoding)$"
)
_SYNCED = {"loose-object", "objects", "committed", "added", "all"}
"""The ``core.fsync`` components that have git flush a loose object to disk."""
_CRUD = ".,:;<>\"\\'"
"""What git strips from either end of a name or an email, with every control character
and space (``strbuf_addstr_without_crud``): an identity that has any is left to git."""


@dataclass(frozen=True, slots=True)
class _Settings:
    plain: bool
    level: int
    durable: bool
    """Whether git would flush each loose object (``core.fsync``, ``core.fsyncObjectFiles``)."""


_settings: dict[str, tuple[tuple[float, ...], _Settings]] = {}
"""Per git folder: the mtimes of the config files git reads for it, and what they said."""


def object_id(kind: bytes, data: bytes, digits: int) -> str:
    """The id git gives ``data`` as an object of ``kind`` (``b"blob"``, ``b"tree"``) in a
    repository whose ids have ``digits`` hex digits (SHA-1: 40, SHA-256: 64)."""
    algorithm = hashlib.sha256 if digits == 64 else hashlib.sha1
    return algorithm(b"%s %d\0" % (kind, len(data)) + data, usedforsecurity=False).hexdigest()


class Objects:
    """The object store of one route's git folder."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.folder = git.git_dir / "objects"
        self._settings: _Settings | None = None

    @property
    def plain(self) -> bool:
        """Whether objects can be written here as git would write them."""
        return self._read_settings().plain

    def has_attributes(self, root: Path, paths: Sequence[str]) -> bool:
        """Whether git could filter a blob at one of ``paths`` of the work tree ``root``
        (an attributes file on its way, or the repository's own): then git hashes it."""
        if (self.git.git_dir / "info" / "attributes").exists():
            return True
        folders = {""}
        for path in paths:
            parts = path.split("/")[:-1]
            folders.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return any((root / f / ".gitattributes").exists() for f in folders)

    def notes(self, root: Path, paths: Sequence[str], digits: int) -> list[str]:
        """The files at ``paths`` of the work tree ``root`` as they are, written as blobs:
        here where the repository is plain and no attributes file could make git filter
        them, else with one ``hash-object``."""
        if self.plain and not self.has_attributes(root, paths):
            return [self.write(b"blob", (root / p).read_bytes(), digits) for p in paths]
        return (
            self.git.run(
                "hash-object",
                "-w",
                "--stdin-paths",
                input="".join(f"{root / p}\n" for p in paths).encode("utf-8", "surrogateescape"),
            )
            .out.decode()
            .split()
        )

    def write(self, kind: bytes, data: bytes, digits: int) -> str:
        """Store ``data`` as an object of ``kind``; its id (``digits`` hex digits)."""
        oid = object_id(kind, data, digits)
        target = self.folder / oid[:2] / oid[2:]
        try:  # there already: made new again, as git does, so a prune running now keeps it
            os.utime(target)
            return oid
        except FileNotFoundError:
            pass
        except OSError:
            return oid  # there, read-only to us: as git, it is used as it is
        settings = self._read_settings()
        packed = zlib.compress(b"%s %d\0" % (kind, len(data)) + data, settings.level)
        target.parent.mkdir(exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix="tmp_obj_", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(packed)
                if settings.durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.chmod(temporary, 0o444)
            # As git: a link that finds the name taken means the object is there already;
            # where the file system has no hard links, a rename.
            try:
                os.link(temporary, target)
            except FileExistsError:
                pass
            except OSError:
                os.replace(temporary, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        return oid

    def read(self, oid: str, most: int | None = None) -> tuple[bytes, bytes] | None:
        """(kind, data) of a loose object; None when it is not loose here, or when it
        takes more than ``most`` bytes on disk (not even read then)."""
        try:
            with open(self.folder / oid[:2] / oid[2:], "rb") as f:
                if most is not None and os.fstat(f.fileno()).st_size > most:
                    return None
                raw = zlib.decompress(f.read())
        except (FileNotFoundError, NotADirectoryError):
            return None
        except zlib.error:
            raise ValueError(f"the loose object {oid} in {self.folder} is damaged") from None
        nul = raw.index(b"\0")
        kind, _, size = raw[:nul].partition(b" ")
        data = raw[nul + 1 :]
        if int(size) != len(data) or object_id(kind, data, len(oid)) != oid:
            raise ValueError(f"the loose object {oid} in {self.folder} is damaged")
        return kind, data

    def commit(
        self,
        tree: str,
        parents: Sequence[str],
        message: str,
        name: str,
        email: str,
    ) -> str | None:
        """A commit as ``git commit-tree`` makes it, authored and committed now by
        ``name <email>``; None when git should make it (a name or email git would
        clean up first)."""
        if not self.plain or _crud(name) or _crud(email):
            return None
        when = int(time.time())
        offset = time.localtime(when).tm_gmtoff // 60
        sign = "-" if offset < 0 else "+"
        stamp = f"{when} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
        person = f"{name} <{email}> {stamp}"
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
        lines += [f"author {person}", f"committer {person}", ""]
        body = "\n".join(lines) + "\n" + message
        if not body.endswith("\n"):
            body += "\n"
        return self.write(b"commit", body.encode("utf-8", "surrogateescape"), len(tree))

    def _read_settings(self) -> _Settings:
        if self._settings is not None:
            return self._settings
        key = str(self.git.git_dir)
        stamps = tuple(_mtime(p) for p in (self.git.git_dir / "config", *_user_files()))
        known = _settings.get(key)
        if known is not None and known[0] == stamps:
            self._settings = known[1]
            return known[1]
        found = self.git.run("config", "--get-regexp", _SETTINGS, check=False).out
        values = {
            name: value
            for name, _, value in (
                line.partition(" ") for line in found.decode("utf-8", "replace").splitlines()
            )
        }
        level = 1  # git's own default for loose objects (Z_BEST_SPEED)
        for name in ("core.compression", "core.loosecompression"):  # the latter wins
            if values.get(name, "").lstrip("-").isdigit():
                level = int(values[name])
        shared = values.get("core.sharedrepository", "false").lower()
        plain = (
            self.folder.is_dir()
            and shared in ("false", "umask", "0", "no", "off")
            and "core.attributesfile" not in values
            and "extensions.compatobjectformat" not in values
            and values.get("i18n.commitencoding", "utf-8").lower() in ("utf-8", "utf8")
            and max(stamps[-2:]) < 0  # no attributes file of the user's or the system's
        )
        components = {c.strip().lower() for c in values.get("core.fsync", "").split(",")}
        flushed = values.get("core.fsyncobjectfiles", "").lower() in ("true", "yes", "on", "1")
        durable = bool(components & _SYNCED) or flushed
        settings = _Settings(plain, level if -1 <= level <= 9 else 1, durable)
        _settings[key] = (stamps, settings)
        self._settings = settings
        return settings


def _crud(text: str) -> bool:
    return (
        not text
        or any(c in _CRUD or c <= " " for c in (text[0], text[-1]))
        or any(c in text for c in "<>\n")
    )


def _user_files() -> tuple[Path, ...]:
    """The user's git settings files, then their attributes file (git's default place) and
    the system's (Debian's git reads ``/etc/gitattributes``)."""
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git"
    chosen = os.environ.get("GIT_CONFIG_GLOBAL")
    named = (Path(chosen),) if chosen else ()
    system = Path("/etc/gitattributes")
    return (*named, home / ".gitconfig", xdg / "config", xdg / "attributes", system)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return -1.0
