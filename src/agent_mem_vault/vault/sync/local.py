"""One route's notes on this machine: stage, commit, and merge what arrived.

The vault's folder is the work tree; each route has an index of its own
(``<sync dir>/<route>.index``) and refs in its git folder: ``local``, the last
commit of this vault's notes; ``fetched``, a commit of the notes the remote had
when last asked, made here from the remote's checkpoint and log (``log.py``);
``log`` and ``checkpoint``, the remote's two refs as last seen; ``applied``, the
log entry ``fetched`` holds. Nothing here checks out, resets or runs git's own
merge: the notes are the truth, and git moves them.

- **stage** (under the vault lock): the notes the journal names (or, at a
  syncer's start and when a route is joined, every note of the route) go into
  the route's index; ``update-index`` reads only files whose size or mtime
  changed.
- **commit** (under the vault lock and the route's turn): a tree from that
  index, committed on ``local`` if it differs; a note that gained a secret here
  keeps in it the version the remote may have (``gate.py``), so ``local``,
  and every entry and checkpoint made from it, never holds the secret.
- **integrate** (under the vault lock): the fetched commit merged into the
  notes, path by path: what only the remote changed is written, what both
  changed is merged by fields (``format/merge.py``), then ``local`` moves to a
  commit whose parents are both.

The route's *turn* is a file lock per route (``<sync dir>/<route>.lock``):
one process of this machine talks to a route's remote at a time, and only the
holder commits, so ``local`` never moves under a push. The network half
(fetch, push, checkpoints) is ``engine.py``.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.clock import format_datetime, utc_now
from ...core.errors import AgentMemVaultError, UnavailableError
from ..folder.files import VaultLock, atomic_write
from .gate import gated_notes, gated_tree
from .gitcmd import Git
from .heads import Heads, read_heads
from .reads import RouteReads
from .routes import SYNC_DIR, Route, SyncConfig, route_git_dir
from .trees import edited_tree, empty_tree_id
from .view import backoff, failures

if TYPE_CHECKING:
    from ..ops.base import VaultBase
    from .entries import LogEntry
    from .fold import Folded

__all__ = [
    "FETCH_FIRST",
    "LATER_MAX",
    "TURN_WAIT",
    "LocalRoute",
    "RouteReport",
    "fetched_ref",
    "read_state",
    "state_file",
]

LATER_MAX = 64
"""Notes named not staged (``LocalRoute.later``) that a commit reads from disk at most;
past that, the index takes them all in one ``update-index``."""
FETCH_FIRST = "fetch first"
"""Why ``push`` sends nothing: this machine has not merged all that the remote has."""
TURN_WAIT = 30.0
"""Seconds a process waits for its turn at a route's remote (another process of this
machine is fetching or pushing) before it gives up (``sync_busy``)."""


def state_file(root: Path, route: Route) -> Path:
    """Where a route's state is kept: what its remote last said, and when."""
    return root / SYNC_DIR / f"{route.key}.state.json"


def read_state(path: Path) -> dict[str, Any]:
    """A route's state ({} when there is none yet, or it cannot be read: it is only
    ever written whole, and losing it costs precision, not notes)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(slots=True)
class RouteReport:
    """What one sync of a route did, for ``sync`` and the session hook."""

    route: Route
    pushed: bool = False
    fetched: bool = False
    arrived: list[str] = field(default_factory=list)
    """Notes written or removed here because the remote had them so."""
    merged: list[str] = field(default_factory=list)
    """Notes both sides changed, merged by fields."""
    kept: list[str] = field(default_factory=list)
    """Conflict notes written: the side that lost a merge."""
    twice: list[str] = field(default_factory=list)
    """Handoffs found delivered on two machines (their notes now say so)."""
    undone: list[str] = field(default_factory=list)
    """Notes whose lifecycle an unlisted key changed (a read, a supersede, a forget), put
    back here as the team had left them (``require``)."""
    error: AgentMemVaultError | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.route.url or self.route.remote,
            "ref": self.route.ref,
            "namespace": self.route.namespace,
            "pushed": self.pushed,
            "fetched": self.fetched,
            "arrived": list(self.arrived),
            "merged": list(self.merged),
            "kept": list(self.kept),
            "twice": list(self.twice),
            "undone": list(self.undone),
            "error": None if self.error is None else self.error.to_dict(),
        }


def fetched_ref(config: SyncConfig, route: Route) -> str:
    """The ref in the route's git folder that holds what this machine last took from the
    remote."""
    if route.repo is None:
        return "refs/agent-mem-vault/fetched"
    return f"refs/agent-mem-vault-local/{config.vault_id}/{route.namespace}/fetched"


class LocalRoute(RouteReads):
    """One route of one vault on this machine: its git folder, index, refs and turn;
    staging and committing the notes, and merging what arrived (``engine.RouteSync``
    adds the network)."""

    def __init__(self, vault: VaultBase, config: SyncConfig, route: Route) -> None:
        self.vault = vault
        self.root = vault.path
        self.config = config
        self.route = route
        folder = self.root / SYNC_DIR
        extra: tuple[str, ...] = ()
        git_dir = route_git_dir(self.root, route)
        if route.repo is None:
            self.local = "refs/heads/main"
            self.fetched = fetched_ref(config, route)
            self.log = "refs/agent-mem-vault/log"
            self.applied = "refs/agent-mem-vault/applied"
            self.checkpoint = "refs/remotes/origin/main"  # a push moves it (operations.py)
            self.remote = "origin"
            # The index of every note, split: a commit rewrites a small file, not one
            # entry per note (the shared part lives in the route's own git folder).
            extra = ("core.splitIndex=true",)
        else:
            base = f"refs/agent-mem-vault-local/{config.vault_id}/{route.namespace}"
            self.local, self.fetched = f"{base}/head", fetched_ref(config, route)
            self.log, self.applied = f"{base}/log", f"{base}/applied"
            self.checkpoint = f"{base}/checkpoint"
            self.remote = route.remote
        self.git = Git(git_dir, self.root, folder / f"{route.key}.index", extra)
        self.turn = VaultLock(folder / f"{route.key}.lock", timeout=TURN_WAIT)
        self.state_file = state_file(self.root, route)
        self._made: dict[str, tuple[str, ...]] = {}
        self._set_by: dict[str, dict[str, tuple[str | None, str]]] = {}
        """What ``commit_notes`` changed in each commit it made: path → (the blob before,
        or None; the blob now): what ``changes`` would say of it against its parent."""
        """Commits this process made on ``local`` and ``fetched``, and their parents: what
        ``merge_base`` and ``is_ancestor`` would ask git, for the usual cases."""
        self._followups: Folded | None = None
        """What the last fold set aside for the vault's notes (layout 2: ``team.py``)."""
        self.sent_entry: tuple[LogEntry, str | None] | None = None
        """The entry the last push of this process made (layout 2), and the tree of
        ``fetched`` it was made on, for the checks that follow it (``team_verify.py``): no
        git is asked what it already knows."""
        self._known: Heads | None = None
        """The refs, as this process last set or read them: only the holder of the turn
        moves them, so while it is held they need not be read again."""

    # -- the route's turn -------------------------------------------------------------

    @contextmanager
    def network_turn(self, wait: float | None = None) -> Iterator[None]:
        """This process's turn at the route's remote (and at committing it)."""
        try:
            self.turn.acquire(wait)
        except UnavailableError:
            raise UnavailableError(
                f"another process of this machine has been talking to {self.route.label} "
                f"for more than {self.turn.timeout if wait is None else wait:g} s; retry "
                "('agent-mem-vault sync --status' shows what it last said)",
                code="sync_busy",
            ) from None
        self._known = None
        try:
            yield
        finally:
            self._known = None
            self.turn.release()

    # -- local: stage and commit (the caller holds the vault lock) -------------------

    def stage(self, paths: Sequence[str] | None) -> None:
        """Put the notes at ``paths`` (None: every note of the route) into its index."""
        if paths is None:
            paths = sorted(set(self._notes_on_disk()) | set(self._staged()))
        mine = [p for p in paths if self.config.covers(self.route, p)]
        if mine:
            self.git.run(
                "update-index",
                "--add",
                "--remove",
                "-z",
                "--stdin",
                input=_nul(mine),
            )

    def _notes_on_disk(self) -> list[str]:
        """Every note of the route in the vault's folder (a walk: no stat per file)."""
        tops = [""]
        if self.route.namespace is not None:
            tops = [f"{self.route.namespace}/handoffs", f"{self.route.namespace}/memories"]
        out: list[str] = []
        if self.route.namespace is not None:
            brief = f"{self.route.namespace}/_brief.md"
            if os.path.isfile(self.root / brief):
                out.append(brief)
        for top in tops:
            stack = [top]
            while stack:
                folder = stack.pop()
                try:
                    entries = list(os.scandir(self.root / folder if folder else self.root))
                except (FileNotFoundError, NotADirectoryError):
                    continue
                for entry in entries:
                    if entry.name[0] == ".":
                        continue
                    rel = f"{folder}/{entry.name}" if folder else entry.name
                    if entry.is_dir(follow_symlinks=False):
                        if rel != "_dashboards" and self.route.namespace is None:
                            stack.append(rel)
                    elif entry.name.endswith(".md") and self.config.covers(self.route, rel):
                        out.append(rel)
        return out

    def modified(self) -> list[str]:
        """The notes of the route's index whose file differs from what is staged (a stat
        each, their text read only where the stat differs): what changed here since."""
        raw = self.git.run("diff-files", "--name-only", "-z", "--no-renames")
        return [p for p in raw.out.decode("utf-8", "surrogateescape").split("\0") if p]

    def _staged(self) -> list[str]:
        raw = self.git.run("ls-files", "-z").out.decode("utf-8", "surrogateescape")
        return [p for p in raw.split("\0") if p]

    def heads(self) -> tuple[str | None, str | None]:
        """(``local``, ``fetched``): the commits the two refs name, or None."""
        known = self._refs()
        return known.local, known.fetched

    @property
    def mirror(self) -> str:
        """Where this machine keeps its copy of the route's refs on the remote (layout 2)."""
        return self.fetched.rsplit("/", 1)[0] + "/remote"

    @property
    def mine(self) -> str:
        """This machine's own log tip, as the remote last confirmed it (layout 2)."""
        return self.fetched.rsplit("/", 1)[0] + "/mine"

    def _mirrored(self) -> dict[str, str]:
        """The refs of layout 2 a push reads, read with the others: ref → ``Heads`` field."""
        if self.route.layout != 2 or self.route.branch is not None:
            return {}
        return {
            f"{self.mirror}/_log/{self.config.machine}": "own",
            f"{self.mirror}/_layout": "marker",
            self.mine: "mine",
        }

    def _refs(self) -> Heads:
        if self._known is not None:
            return self._known
        return self._read_refs(None)[0]

    def _read_refs(self, under: str | None) -> tuple[Heads, dict[str, str]]:
        """The route's refs read now (kept while the turn is held), and those under the
        prefix ``under``, in one git process."""
        refs = {"local": self.local, "fetched": self.fetched, "log": self.log}
        refs.update(applied=self.applied, checkpoint=self.checkpoint)
        mirrored = {f: n for n, f in self._mirrored().items()}
        known, listed = read_heads(self.git, {**refs, **mirrored}, under)
        if self.turn.held:
            self._known = known
        return known, listed

    def local_tree(self) -> str | None:
        """The tree of the commit ``local`` names."""
        return self._refs().local_tree

    def fetched_tree(self, commit: str) -> str:
        """The tree of ``commit``, the one ``fetched`` names as a rule."""
        known = self._refs()
        return (
            known.fetched_tree
            if known.fetched == commit and known.fetched_tree
            else self._tree(commit)
        )

    def _moved(self, **changes: str | None) -> None:
        """Remember what this process just set a ref to (while it has the turn)."""
        if self._known is not None:
            self._known = replace(self._known, **changes)

    def commit(self, message: str) -> str | None:
        """Commit the route's index on ``local`` if it differs; the commit ``local`` names.
        Where the index holds nothing but what ``local`` had before the notes named as
        not staged yet (``later``), those are committed from disk without it."""
        done, head = self._commit_from_disk(message)
        if done:
            return head
        tree = self._write_tree()
        known = self._refs()
        head = known.local
        if head is not None and known.local_tree == tree:
            return head
        if head is None and tree == empty_tree_id(len(tree)):
            return None
        tree = gated_tree(self, tree, known.local_tree, known.local_tree)
        if head is not None and known.local_tree == tree:
            return head
        new = self.git.commit_tree(tree, [head] if head is not None else [], message)
        self.git.run("update-ref", self.local, new, head or "")
        self._moved(local=new, local_tree=tree)
        return new

    def _commit_from_disk(self, message: str) -> tuple[bool, str | None]:
        """``commit`` without the route's index: (True, what ``local`` names now), or
        (False, None) where the index must be read. The index is left alone when it is
        the very file the last ``write-tree`` made (``_write_tree``'s stamp): it then
        holds ``local``'s notes but those named not staged yet, and those are read from
        disk along their paths only (``trees.py``), two git processes fewer. They stay
        named until a ``write-tree`` stages them, all at once (``LATER_MAX``)."""
        state = self.state()
        paths, seen = state.get("unstaged"), state.get("index")
        index = self.git.env["GIT_INDEX_FILE"]
        if not paths or len(paths) > LATER_MAX or not isinstance(seen, list):
            return False, None
        known = self._refs()
        if seen[:3] != _stamp(index) or known.local is None or known.local_tree is None:
            return False, None
        mine = [str(p) for p in paths if self.config.covers(self.route, str(p))]
        files = []
        for path in mine:
            try:
                mode = os.lstat(self.root / path).st_mode
            except FileNotFoundError:
                continue  # removed: it goes from the tree
            if "\n" in path or not stat.S_ISREG(mode) or mode & 0o111:
                return False, None  # a link, a folder, an executable: as the index has them
            files.append(path)
        try:
            blobs = self.git.objects.notes(self.root, files, len(known.local_tree))
        except FileNotFoundError:
            return False, None  # removed by hand meanwhile
        ids: dict[str, str | None] = {**dict.fromkeys(mine), **dict(zip(files, blobs, strict=True))}
        tree = edited_tree(self.git, known.local_tree, ids)
        # The index holds ``local``'s notes but these, or a commit from disk would leave
        # out what it holds besides (a write-tree whose commit never came: a process
        # stopped between, a held note): then git reads it.
        index_tree = str(seen[3])
        if (
            index_tree != known.local_tree
            and edited_tree(self.git, index_tree, ids, write=False) != tree
        ):
            return False, None
        if tree != known.local_tree:
            gated = gated_tree(self, tree, known.local_tree, known.local_tree, index=False)
            if gated is None:
                return False, None  # a note holds a secret: the index path keeps it out
            tree = gated
        if tree == known.local_tree:
            return True, known.local
        new = self.git.commit_tree(tree, [known.local], message)
        self._made[new] = (known.local,)
        self.git.run("update-ref", self.local, new, known.local)
        self._moved(local=new, local_tree=tree)
        return True, new

    def commit_notes(self, paths: Sequence[str], message: str) -> str | None:
        """Commit the notes at ``paths`` as they are on disk on top of ``local``, without
        the route's index (``trees.py``: the trees along their paths only); None when
        there is no ``local`` yet (``commit`` then). The index catches up before it is
        next read for a tree (``later``)."""
        known = self._refs()
        if known.local is None or known.local_tree is None:
            return None
        mine = [p for p in paths if self.config.covers(self.route, p)]
        if not mine:
            return known.local
        if any("\n" in p for p in mine):
            return None  # --stdin-paths reads a path per line
        mine = gated_notes(self, mine, known.local_tree)
        if not mine:
            return known.local
        blobs = self.git.objects.notes(self.root, mine, len(known.local_tree))
        ids = dict(zip(mine, blobs, strict=True))
        was: dict[str, str | None] = {}
        tree = edited_tree(self.git, known.local_tree, ids, before=was)
        if tree == known.local_tree:
            return known.local
        new = self.git.commit_tree(tree, [known.local], message)
        self._made[new] = (known.local,)
        if was.keys() == ids.keys():  # else one was a folder or a link: git says (``changes``)
            self._set_by[new] = {p: (was[p], b) for p, b in ids.items() if was[p] != b}
        self.later(mine)
        self.git.run("update-ref", self.local, new, known.local)
        self._moved(local=new, local_tree=tree)
        return new

    def fast_forward(self, ours: str | None, theirs: str, paths: Sequence[str]) -> None:
        """Move ``local`` from ``ours`` to ``theirs``, whose notes at ``paths`` are now
        on disk, the rest unchanged since ``ours``: the index catches up with ``paths``
        before it is next read for a tree (``later``), not now."""
        self.later(paths)
        self.git.run("update-ref", self.local, theirs, ours or "")
        self._moved(local=theirs, local_tree=self.fetched_tree(theirs))

    def later(self, paths: Sequence[str]) -> None:
        """Note ``paths`` as not staged in the route's index yet: the next commit reads
        them from disk, and the next ``write-tree`` stages them first. Staged now if
        that cannot be written down (a tree made from an index without them would undo
        them)."""
        if not paths:
            return
        state = self.state()
        state["unstaged"] = sorted({*state.get("unstaged", ()), *paths})
        try:
            atomic_write(self.state_file, json.dumps(state) + "\n", durable=False)
        except OSError:
            self.stage(paths)

    def _write_tree(self) -> str:
        """The tree of the route's index: ``write-tree``, unless the index file is the
        very one the last ``write-tree`` left (it reads every entry: 10 ms at 100,000
        notes, for a sync with nothing new)."""
        index = self.git.env["GIT_INDEX_FILE"]
        state = self.state()
        unstaged = state.pop("unstaged", None)
        if unstaged:
            self.stage([str(p) for p in unstaged])
            self.save_state(state)
        seen = state.get("index")
        if isinstance(seen, list) and len(seen) == 4 and seen[:3] == _stamp(index):
            return str(seen[3])
        tree = self.git.text("write-tree")
        stamp = _stamp(index)
        if stamp is not None:
            state["index"] = [*stamp, tree]
            self.save_state(state)
        return tree

    def retract(self, commit: str, back_to: str | None, tree: str | None) -> None:
        """``local`` back from ``commit`` (a claim the remote refused, so never sent on)
        to ``back_to``; what ``commit`` staged stays staged for the next commit."""
        if back_to is None:
            self.git.run("update-ref", "-d", self.local, commit)
        else:
            self.git.run("update-ref", self.local, back_to, commit)
        self._moved(local=back_to, local_tree=tree)

    def _tree(self, commit: str) -> str:
        return self.git.text("rev-parse", f"{commit}^{{tree}}")

    # -- merging what arrived (the caller holds the vault lock) ----------------------

    def advance(self, ours: str | None, theirs: str, base: str | None) -> None:
        """Move ``local`` past ``theirs``: to it when the route's index now holds exactly
        its tree (a fast-forward), else to a merge commit of the two."""
        tree, their_tree = self._write_tree(), self.fetched_tree(theirs)
        if tree != their_tree:  # what the merge adds to theirs passes the gate (gate.py)
            tree = gated_tree(self, tree, their_tree, their_tree, self.local_tree())
        if (ours is None or base == ours) and tree == their_tree:
            self.git.run("update-ref", self.local, theirs, ours or "")
            self._moved(local=theirs, local_tree=tree)
            return
        merge = self.git.commit_tree(tree, [*([ours] if ours else []), theirs], "merge")
        self.git.run("update-ref", self.local, merge, ours or "")
        self._moved(local=merge, local_tree=tree)

    # -- what the route last said ---------------------------------------------------

    def _remember(
        self,
        *,
        fetched: bool = False,
        pushed: bool = False,
        error: AgentMemVaultError | None = None,
        unanswered: bool = False,
        unsent: str | None = None,
        said: Mapping[str, Any] | None = None,
    ) -> None:
        """Note what the remote last said; ``unanswered``: it could not be asked (refused,
        silent, gone), so callers that need not wait leave it alone for a while
        (``view.py``); ``said``: more of the route's state, written in the same write."""
        state = self.state()
        state.update(said or {})
        sent = state.get("sent")
        if unsent is not None and isinstance(sent, dict):
            state["sent"] = {e: c for e, c in sent.items() if e != unsent}
        now = format_datetime(utc_now())
        if fetched:
            state["last_fetch"] = now
        if pushed:
            state["last_push"] = now
        if fetched or pushed:
            state["error"] = None
            state.pop("failures", None)
            state.pop("ask_after", None)
        if error is not None:
            state["error"] = {"code": error.code, "message": error.message, "at": now}
        if unanswered:
            count = failures(state) + 1
            state["failures"] = count
            state["ask_after"] = time.time() + backoff(count)
        self.save_state(state)

    def save_state(self, state: dict[str, Any]) -> None:
        # Lost, the state costs only precision: --status's lines, the index's stamp (a
        # write-tree more), ``sent`` (a merge that keeps the remote's side); ``unstaged``,
        # which must not be lost, is written by ``later``.
        with suppress(OSError):
            atomic_write(self.state_file, json.dumps(state) + "\n", durable=False)

    def state(self) -> dict[str, Any]:
        return read_state(self.state_file)

    def ahead_behind(self) -> tuple[int, int]:
        """Commits ``local`` has that the remote lacked at the last fetch, and the other
        way round."""
        local, fetched = self.heads()
        if local is None:
            return 0, 0
        if fetched is None:
            return int(self.git.text("rev-list", "--count", local)), 0
        counts = self.git.text("rev-list", "--left-right", "--count", f"{local}...{fetched}")
        ahead, behind = counts.split()
        return int(ahead), int(behind)


def _stamp(path: str) -> list[int] | None:
    """Which file ``path`` is now: git replaces its index with a new file at each write."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_ino, st.st_mtime_ns, st.st_size]


def _nul(paths: Sequence[str]) -> bytes:
    return "".join(f"{p}\0" for p in paths).encode("utf-8", "surrogateescape")
