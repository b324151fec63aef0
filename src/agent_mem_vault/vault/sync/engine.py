"""Commit, fetch, merge and push one route's notes, with plumbing ``git`` commands.

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
  index, committed on ``local`` if it differs.
- **fetch** / **push** (the route's turn, not the vault lock: writers go on):
  ``fetch`` applies the log's new entries to ``fetched``; ``push`` sends what
  ``local`` changed since ``fetched`` as the log's next entry, refused unless it
  fast-forwards the log, and the remote updates a ref only from the value the
  push saw: that refusal is the compare-and-swap ``claim`` builds on.
- **integrate** (under the vault lock): the fetched commit merged into the
  notes, path by path: what only the remote changed is written, what both
  changed is merged by fields (``merge.py``), then ``local`` moves to a commit
  whose parents are both.

The route's *turn* is a file lock per route (``<sync dir>/<route>.lock``):
one process of this machine talks to a route's remote at a time, and only the
holder commits, so ``local`` never moves under a push.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.clock import format_datetime, utc_now
from ...core.errors import AgentMemVaultError, RemoteError, UnavailableError
from ..files import VaultLock, atomic_write
from .gitcmd import Git, GitResult, remote_failure
from .journal import take_changes
from .log import (
    CHECKPOINT_EVERY,
    CHECKPOINT_FROM,
    Entry,
    checkpoint_message,
    entry_message,
    log_position,
)
from .log import entries as log_entries
from .routes import SYNC_DIR, Route, SyncConfig
from .trees import edited_tree, empty_tree_id

if TYPE_CHECKING:
    from ..base import VaultBase

__all__ = [
    "NET_TIMEOUT_ENV",
    "RouteReport",
    "RouteSync",
    "net_timeout",
    "stage_journal",
    "sync_route",
]

NET_TIMEOUT_ENV = "AGENT_MEM_VAULT_SYNC_TIMEOUT"
"""Seconds a fetch or a push may take before it is given up (default 20)."""
PATIENT = 300.0
"""Seconds a fetch or a push of a whole sync (``sync``, joining, the background syncer)
may take: the first push of a large vault sends every note."""
TURN_WAIT = 30.0
"""Seconds a process waits for its turn at a route's remote (another process of this
machine is fetching or pushing) before it gives up (``sync_busy``)."""
FETCH_FIRST = "fetch first"
"""Why ``push`` sends nothing: this machine has not merged all that the remote has."""
MAX_ROUNDS = 200
"""Pushes a sync or a claim tries before it gives up on a remote that keeps moving."""
_REGULAR = ("100644", "100755")


def net_timeout() -> float:
    raw = os.environ.get(NET_TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else 20.0
    except ValueError:
        value = 20.0
    return value if value > 0 else 20.0


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
            "error": None if self.error is None else self.error.to_dict(),
        }


class RouteSync:
    """One route of one vault: its git folder, index, refs and turn."""

    def __init__(self, vault: VaultBase, config: SyncConfig, route: Route) -> None:
        self.vault = vault
        self.root = vault.path
        self.config = config
        self.route = route
        folder = self.root / SYNC_DIR
        extra: tuple[str, ...] = ()
        if route.repo is None:
            git_dir = folder / f"{route.key}.git"
            self.local = "refs/heads/main"
            self.fetched = "refs/agent-mem-vault/fetched"
            self.log = "refs/agent-mem-vault/log"
            self.applied = "refs/agent-mem-vault/applied"
            self.checkpoint = "refs/remotes/origin/main"  # a push moves it (operations.py)
            self.remote = "origin"
            # The index of every note, split: a commit rewrites a small file, not one
            # entry per note (the shared part lives in the route's own git folder).
            extra = ("core.splitIndex=true",)
        else:
            git_dir = Path(route.repo)
            base = f"refs/agent-mem-vault-local/{config.vault_id}/{route.namespace}"
            self.local, self.fetched = f"{base}/head", f"{base}/fetched"
            self.log, self.applied = f"{base}/log", f"{base}/applied"
            self.checkpoint = f"{base}/checkpoint"
            self.remote = route.remote
        self.git = Git(git_dir, self.root, folder / f"{route.key}.index", extra)
        self.turn = VaultLock(folder / f"{route.key}.lock", timeout=TURN_WAIT)
        self.state_file = folder / f"{route.key}.state.json"
        self._made: dict[str, tuple[str, ...]] = {}
        self._set_by: dict[str, dict[str, str]] = {}
        """What ``commit_notes`` set in each commit it made: path → blob."""
        """Commits this process made on ``local`` and ``fetched``, and their parents: what
        ``merge_base`` and ``is_ancestor`` would ask git, for the usual cases."""
        self._known: _Heads | None = None
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

    def _staged(self) -> list[str]:
        raw = self.git.run("ls-files", "-z").out.decode("utf-8", "surrogateescape")
        return [p for p in raw.split("\0") if p]

    def heads(self) -> tuple[str | None, str | None]:
        """(``local``, ``fetched``): the commits the two refs name, or None."""
        known = self._refs()
        return known.local, known.fetched

    def _refs(self) -> _Heads:
        if self._known is not None:
            return self._known
        result = self.git.run(
            "for-each-ref",
            "--format=%(refname) %(objectname) %(tree)",
            self.local,
            self.fetched,
            self.log,
            self.applied,
            self.checkpoint,
        )
        found = {}
        for line in result.out.decode().splitlines():
            name, commit, tree = line.split(" ")
            found[name] = (commit, tree)
        local, fetched = found.get(self.local), found.get(self.fetched)
        known = _Heads(
            local[0] if local else None,
            local[1] if local else None,
            fetched[0] if fetched else None,
            fetched[1] if fetched else None,
            (found.get(self.log) or (None,))[0],
            (found.get(self.applied) or (None,))[0],
            (found.get(self.checkpoint) or (None,))[0],
        )
        if self.turn.held:
            self._known = known
        return known

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
        """Commit the route's index on ``local`` if it differs; the commit ``local`` names."""
        tree = self._write_tree()
        known = self._refs()
        head = known.local
        if head is not None and known.local_tree == tree:
            return head
        if head is None and tree == empty_tree_id(len(tree)):
            return None
        parents = ["-p", head] if head is not None else []
        new = self.git.text("commit-tree", "--no-gpg-sign", tree, *parents, "-m", message)
        self.git.run("update-ref", self.local, new, head or "")
        self._moved(local=new, local_tree=tree)
        return new

    def commit_notes(self, paths: Sequence[str], message: str) -> str | None:
        """Commit the notes at ``paths`` as they are on disk on top of ``local``, without
        the route's index (``trees.py``: the trees along their paths only); None when
        there is no ``local`` yet (``commit`` then). The index catches up before it is
        next read for a tree (``_later``)."""
        known = self._refs()
        if known.local is None or known.local_tree is None:
            return None
        mine = [p for p in paths if self.config.covers(self.route, p)]
        if not mine:
            return known.local
        if any("\n" in p for p in mine):
            return None  # --stdin-paths reads a path per line
        blobs = self.git.run(
            "hash-object",
            "-w",
            "--stdin-paths",
            input="".join(f"{self.root / p}\n" for p in mine).encode("utf-8", "surrogateescape"),
        ).out.split()
        ids = dict(zip(mine, (b.decode() for b in blobs), strict=True))
        tree = edited_tree(self.git, known.local_tree, ids)
        if tree == known.local_tree:
            return known.local
        new = self.git.text("commit-tree", "--no-gpg-sign", tree, "-p", known.local, "-m", message)
        self._made[new] = (known.local,)
        self._set_by[new] = ids
        self._later(mine)
        self.git.run("update-ref", self.local, new, known.local)
        self._moved(local=new, local_tree=tree)
        return new

    def fast_forward(self, ours: str | None, theirs: str, paths: Sequence[str]) -> None:
        """Move ``local`` from ``ours`` to ``theirs``, whose notes at ``paths`` are now
        on disk, the rest unchanged since ``ours``: the index catches up with ``paths``
        before it is next read for a tree (``_later``), not now."""
        self._later(paths)
        self.git.run("update-ref", self.local, theirs, ours or "")
        self._moved(local=theirs, local_tree=self.fetched_tree(theirs))

    def _later(self, paths: Sequence[str]) -> None:
        """Note ``paths`` as committed but not staged in the route's index yet; staged
        now if that cannot be written down (a tree made from an index without them
        would undo them)."""
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
            self._save(state)
        seen = state.get("index")
        if isinstance(seen, list) and len(seen) == 4 and seen[:3] == _stamp(index):
            return str(seen[3])
        tree = self.git.text("write-tree")
        stamp = _stamp(index)
        if stamp is not None:
            state["index"] = [*stamp, tree]
            self._save(state)
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

    # -- network (the caller has the route's turn) -------------------------------------

    def fetch(self, timeout: float | None = None) -> str | None:
        """What the remote has for the route: its log's new entries fetched and applied
        to ``fetched`` (``log.py``); None when the remote has nothing yet."""
        limit = net_timeout() if timeout is None else timeout
        before = self._refs()
        whole = before.fetched is None
        self._fetch_refs(whole, limit)
        now = self._refs()
        entries = []
        if now.log is not None and not whole and now.log != before.applied:
            entries = log_entries(self.git, before.applied, now.log)
        if not whole and any(e.checkpoint for e in entries):
            # Many notes changed at once: start again from the checkpoint they went to.
            self._fetch_refs(True, limit)
            now, whole = self._refs(), True
        if whole:
            return self._apply_whole(now)
        if not entries:
            return now.fetched
        assert now.fetched is not None and now.fetched_tree is not None
        return self._apply(now, now.fetched_tree, entries, [now.fetched])

    def _fetch_refs(self, checkpoint: bool, limit: float) -> None:
        """Fetch the route's log (and its checkpoint); a ref the remote does not have
        (a remote with nothing yet, or written before the log) is left out."""
        specs = {self.route.log_ref: f"+{self.route.log_ref}:{self.log}"}
        if checkpoint:
            specs[self.route.ref] = f"+{self.route.ref}:{self.checkpoint}"
        while specs:
            result = self._network(
                "fetch",
                "--no-tags",
                "--no-write-fetch-head",
                "--no-recurse-submodules",
                "--quiet",
                self.remote,
                *specs.values(),
                timeout=limit,
            )
            if result.status == 0:
                break
            missing = [r for r in specs if f"couldn't find remote ref {r}" in result.err]
            if not missing:
                raise self._failed(result)
            for ref in missing:
                del specs[ref]
                self._set_refs(
                    {self.log if ref == self.route.log_ref else self.checkpoint: (None, None)}
                )
        self._remember(fetched=True)
        self._known = None

    def _apply_whole(self, now: _Heads) -> str | None:
        """``fetched`` made from the checkpoint and the log's entries after the point
        it names (all of them, for a checkpoint written before the log)."""
        if now.checkpoint is None and now.log is None:
            return now.fetched  # a remote with nothing yet
        point = None
        if now.checkpoint is None:
            assert now.log is not None
            tree, parents = self._empty_tree(len(now.log)), []
        else:
            tree, parents = self._tree(now.checkpoint), [now.checkpoint]
            point = log_position(self.git, now.checkpoint)
        if now.fetched is not None:
            parents.insert(0, now.fetched)
        entries = log_entries(self.git, point, now.log) if now.log is not None else []
        return self._apply(now, tree, entries, parents)

    def _apply(self, now: _Heads, tree: str, entries: list[Entry], parents: list[str]) -> str:
        """``fetched`` made ``tree`` with ``entries`` applied in order (a new commit, its
        parents ``parents``), then ``applied`` moved to the log's tip: ``fetched`` first,
        as applying an entry twice changes nothing."""
        # An entry of this machine whose push went unanswered: the remote has that commit.
        sent = self.state().get("sent")
        found = [e.commit for e in entries if isinstance(sent, dict) and e.commit in sent]
        ours = [sent[c] for c in found] if isinstance(sent, dict) else []
        marks = [i for i, e in enumerate(entries) if e.checkpoint is not None]
        if marks:  # many notes changed at once: what came before the last such push is in it
            checkpoint = entries[marks[-1]].checkpoint
            assert checkpoint is not None
            if checkpoint != now.checkpoint:
                raise RemoteError(
                    f"{self.route.label} changed while it was read (its log points at a "
                    f"checkpoint {checkpoint[:12]} it does not hold); run "
                    "'agent-mem-vault sync' again",
                    code="remote_moved",
                )
            tree, entries = self._tree(checkpoint), entries[marks[-1] + 1 :]
            parents = [*parents, checkpoint]
        parents = [*parents, *ours]
        changes: dict[str, str | None] = {}
        for entry in entries:
            for path in entry.removed:
                changes[path] = None
            changes.update(entry.changed)
        mine = {p: b for p, b in changes.items() if self.config.covers(self.route, p)}
        new_tree = edited_tree(self.git, tree, mine) if mine else tree
        links = [a for p in dict.fromkeys(parents) for a in ("-p", p)]
        commit = self.git.text(
            "commit-tree", "--no-gpg-sign", new_tree, *links, "-m", f"the remote at {now.log}"
        )
        self._made[commit] = tuple(dict.fromkeys(parents))
        self._set_refs({self.fetched: (commit, now.fetched), self.applied: (now.log, now.applied)})
        if found:
            self._unsent(*found)
        self._moved(fetched=commit, fetched_tree=new_tree, applied=now.log)
        return commit

    def _set_refs(self, moves: dict[str, tuple[str | None, str | None]]) -> None:
        """Move refs in one transaction: name → (new value or None to delete, old value
        or None for any)."""
        lines = []
        for name, (new, old) in moves.items():
            if new is None:
                lines.append(f"delete {name}\n")
            else:
                lines.append(f"update {name} {new}{' ' + old if old else ''}\n")
        self.git.run("update-ref", "--stdin", input="".join(lines).encode())

    def _empty_tree(self, digits: int) -> str:
        """The empty tree, written (a marker's tree), in a repository whose ids have
        ``digits`` hex digits."""
        return edited_tree(self.git, empty_tree_id(digits), {})

    def push(self, commit: str, timeout: float | None = None, title: str = "notes") -> str | None:
        """Send what ``commit`` changed since ``fetched`` as one entry of the route's log:
        None if the remote took it, else why it refused (it did not fast-forward the
        log: another machine pushed first)."""
        limit = net_timeout() if timeout is None else timeout
        known = self._refs()
        if known.log != known.applied or (
            known.fetched is not None and not self.is_ancestor(known.fetched, commit)
        ):
            return FETCH_FIRST
        changes: dict[str, tuple[str | None, str | None]]
        if self._made.get(commit) == (known.fetched,) and commit in self._set_by:
            changes = {p: (None, b) for p, b in self._set_by[commit].items()}  # a claim's
        else:
            changes = self.changes(known.fetched, commit)
        if not changes:
            self._set_refs({self.fetched: (commit, known.fetched)})
            self._moved(fetched=commit, fetched_tree=None)
            return None
        removed = [p for p, (_old, new) in changes.items() if new is None]
        after = [("-p", known.log)] if known.log else []
        parent = [a for pair in after for a in pair]
        if len(changes) > CHECKPOINT_FROM or known.fetched is None:
            return self._push_checkpoint(commit, known, parent, limit)
        blobs = {p: new for p, (_old, new) in changes.items() if new is not None}
        tree = edited_tree(self.git, empty_tree_id(len(commit)), blobs)
        entry = self.git.text(
            "commit-tree", "--no-gpg-sign", tree, *parent, "-m", entry_message(title, removed)
        )
        return self._send_entry(commit, entry, known, limit, f"{entry}:{self.route.log_ref}")

    def _push_checkpoint(
        self, commit: str, known: _Heads, parent: list[str], limit: float
    ) -> str | None:
        """Many notes at once: a checkpoint of every note, and a log entry pointing at it,
        in one atomic push (the log's compare-and-swap decides for both)."""
        tree = self._tree(commit)
        checkpoint = self.git.text(
            "commit-tree", "--no-gpg-sign", tree, "-m", checkpoint_message(known.log)
        )
        marker = self.git.text(
            "commit-tree",
            "--no-gpg-sign",
            self._empty_tree(len(commit)),
            *parent,
            "-m",
            entry_message("checkpoint", [], checkpoint),
        )
        refused = self._send_entry(
            commit,
            marker,
            known,
            limit,
            f"+{checkpoint}:{self.route.ref}",
            f"{marker}:{self.route.log_ref}",
        )
        if refused is None:
            self._set_refs({self.checkpoint: (checkpoint, None)})
        return refused

    def _send_entry(
        self, commit: str, entry: str, known: _Heads, limit: float, *specs: str
    ) -> str | None:
        """Push ``entry`` (with ``specs``, atomically), the log entry of ``commit``. Until
        the remote answers, the pair is written down (``sent``): if the answer is lost
        but the entry landed, the fetch that brings it back makes ``commit`` a parent of
        ``fetched``, so that what this machine did since (a claim put back) still
        counts as its own change in the next merge."""
        state = self.state()
        sent = state.get("sent")
        state["sent"] = {**(sent if isinstance(sent, dict) else {}), entry: commit}
        self._save(state)
        # Raises if the remote did not answer: the pair stays written down.
        refused = self._send(limit, *specs, atomic=len(specs) > 1, sent=entry)
        if refused is None:
            self._pushed(commit, entry, known)
        else:
            self._unsent(entry)  # refused: it never landed
        return refused

    def _unsent(self, *entries: str) -> None:
        state = self.state()
        sent = state.get("sent")
        if isinstance(sent, dict) and any(e in sent for e in entries):
            state["sent"] = {e: c for e, c in sent.items() if e not in entries}
            self._save(state)

    def checkpoint_if_due(self, timeout: float | None = None) -> bool:
        """A new checkpoint of the remote's notes, if its log has grown ``CHECKPOINT_EVERY``
        entries past the one this machine knows (and it is still that one on the remote);
        whether one was written. Only after this machine applied the whole log."""
        known = self._refs()
        if known.log is None or known.log != known.applied or known.fetched is None:
            return False
        state = self.state()
        since = state.get("checkpoint_tried")
        if not isinstance(since, str) or not since:
            since = log_position(self.git, known.checkpoint) if known.checkpoint else None
        span = [f"{since}..{known.log}"] if since else [known.log]
        if int(self.git.text("rev-list", "--count", *span)) < CHECKPOINT_EVERY:
            return False
        state["checkpoint_tried"] = known.log  # tried once per CHECKPOINT_EVERY entries
        self._save(state)
        tree = known.fetched_tree or self._tree(known.fetched)
        checkpoint = self.git.text(
            "commit-tree", "--no-gpg-sign", tree, "-m", checkpoint_message(known.log)
        )
        lease = f"--force-with-lease={self.route.ref}:{known.checkpoint or ''}"
        limit = net_timeout() if timeout is None else timeout
        # No "+": a forced refspec would override the lease.
        if self._send(limit, f"{checkpoint}:{self.route.ref}", options=(lease,)) is not None:
            return False  # another machine wrote one first: it stands
        self._set_refs({self.checkpoint: (checkpoint, None)})
        self._moved(checkpoint=checkpoint)
        return True

    def _send(
        self,
        limit: float,
        *specs: str,
        atomic: bool = False,
        options: Sequence[str] = (),
        sent: str | None = None,
    ) -> str | None:
        """Push ``specs``: None if the remote took them, else why it refused; ``sent``:
        the log entry written down as sent, no longer so once the remote took it."""
        result = self._network(
            "push",
            "--no-verify",
            "--porcelain",
            "--quiet",
            *(["--atomic"] if atomic else []),
            *options,
            self.remote,
            *specs,
            timeout=limit,
        )
        refused = [
            line for line in result.out.decode("utf-8", "replace").splitlines() if line[:1] == "!"
        ]
        if result.status == 0 and not refused:
            self._remember(pushed=True, unsent=sent)
            return None
        if refused:
            return refused[0].rsplit("\t", 1)[-1]
        raise self._failed(result)

    def _pushed(self, commit: str, entry: str, known: _Heads) -> None:
        """The remote took ``entry``: it has the notes of ``commit`` now."""
        self._set_refs(
            {
                self.fetched: (commit, known.fetched),
                self.log: (entry, known.log),
                self.applied: (entry, known.applied),
            }
        )
        self._moved(fetched=commit, fetched_tree=None, log=entry, applied=entry)

    def is_ancestor(self, older: str, newer: str) -> bool:
        if older == newer or older in self._made.get(newer, ()):
            return True
        return self.git.run("merge-base", "--is-ancestor", older, newer, check=False).status == 0

    def refused(self, reason: str) -> RemoteError:
        """The error for a push refused although the remote has nothing newer: a rule
        there (a protected ref, a hook), not another machine."""
        error = RemoteError(
            f"{self.route.label} refused the push ({reason}) although nothing newer is "
            f"there; a rule on the remote forbids it (a protected ref, a hook): allow the "
            f"ref {self.route.ref} there",
            code="push_refused",
        )
        self._remember(error=error)
        return error

    def _network(self, *args: str, timeout: float) -> GitResult:
        try:
            return self.git.run(*args, timeout=timeout, check=False)
        except TimeoutError:
            error = remote_failure(self.route.label, None, timeout=timeout)
            self._remember(error=error)
            raise error from None

    def _failed(self, result: GitResult) -> AgentMemVaultError:
        error = remote_failure(self.route.label, result)
        self._remember(error=error)
        return error

    # -- merging what arrived (the caller holds the vault lock) ----------------------

    def integrate(self, theirs: str | None, report: RouteReport) -> None:
        """Merge the fetched commit ``theirs`` into the vault's notes and ``local``
        (``arrivals.py``; the caller holds the vault lock)."""
        from .arrivals import integrate

        integrate(self, theirs, report)

    def advance(self, ours: str | None, theirs: str, base: str | None) -> None:
        """Move ``local`` past ``theirs``: to it when the route's index now holds exactly
        its tree (a fast-forward), else to a merge commit of the two."""
        tree = self._write_tree()
        if (ours is None or base == ours) and tree == self.fetched_tree(theirs):
            self.git.run("update-ref", self.local, theirs, ours or "")
            self._moved(local=theirs, local_tree=tree)
            return
        parents = ["-p", ours] if ours is not None else []
        merge = self.git.text(
            "commit-tree", "--no-gpg-sign", tree, *parents, "-p", theirs, "-m", "merge"
        )
        self.git.run("update-ref", self.local, merge, ours or "")
        self._moved(local=merge, local_tree=tree)

    def merge_base(self, ours: str, theirs: str) -> str | None:
        if self._made.get(theirs) == (ours,):
            return ours  # the remote's new notes, made here on top of ours
        result = self.git.run("merge-base", ours, theirs, check=False)
        return result.out.decode().strip() or None if result.status == 0 else None

    def changes(self, base: str | None, commit: str) -> dict[str, tuple[str | None, str | None]]:
        """The route's notes ``commit`` changed since ``base``: path → (blob before, after);
        None where there was none (added, removed) or it is not a regular file."""
        result = self.git.run(
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--no-commit-id",
            base or empty_tree_id(len(commit)),
            commit,
        )
        parts = result.out.decode("utf-8", "surrogateescape").split("\0")
        out: dict[str, tuple[str | None, str | None]] = {}
        for i in range(0, len(parts) - 1, 2):
            meta, path = parts[i], parts[i + 1]
            fields = meta.lstrip(":").split(" ")
            if len(fields) < 5 or not self.config.covers(self.route, path):
                continue  # a remote's path that is no note of this route is never written
            old_mode, new_mode, old, new = fields[0], fields[1], fields[2], fields[3]
            out[path] = (
                old if old_mode in _REGULAR else None,
                new if new_mode in _REGULAR else None,
            )
        return out

    def blobs(self, ids: list[str]) -> dict[str, str]:
        """The text of each blob ``ids`` names (one ``cat-file`` for all)."""
        if not ids:
            return {}
        raw = self.git.run("cat-file", "--batch", input="".join(f"{i}\n" for i in ids).encode()).out
        out: dict[str, str] = {}
        pos = 0
        for blob_id in ids:
            end = raw.index(b"\n", pos)
            header = raw[pos:end].decode().split(" ")
            size = int(header[2]) if len(header) == 3 else 0
            body = raw[end + 1 : end + 1 + size]
            out[blob_id] = body.decode("utf-8", "replace")
            pos = end + 1 + size + 1
        return out

    # -- what the route last said ---------------------------------------------------

    def _remember(
        self,
        *,
        fetched: bool = False,
        pushed: bool = False,
        error: AgentMemVaultError | None = None,
        unsent: str | None = None,
    ) -> None:
        state = self.state()
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
        if error is not None:
            state["error"] = {"code": error.code, "message": error.message, "at": now}
        self._save(state)

    def _save(self, state: dict[str, Any]) -> None:
        # Lost, the state costs only precision: --status's lines, the index's stamp (a
        # write-tree more), ``sent`` (a merge that keeps the remote's side); ``unstaged``,
        # which must not be lost, is written by ``_later``.
        with suppress(OSError):
            atomic_write(self.state_file, json.dumps(state) + "\n", durable=False)

    def state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_file.read_bytes())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

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


@dataclass(frozen=True, slots=True)
class _Heads:
    local: str | None
    local_tree: str | None
    fetched: str | None
    fetched_tree: str | None = None
    log: str | None = None
    """The remote's log as last fetched or pushed."""
    applied: str | None = None
    """The log entry ``fetched`` holds the notes of (``log`` once they are applied)."""
    checkpoint: str | None = None


def _stamp(path: str) -> list[int] | None:
    """Which file ``path`` is now: git replaces its index with a new file at each write."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_ino, st.st_mtime_ns, st.st_size]


def _nul(paths: Sequence[str]) -> bytes:
    return "".join(f"{p}\0" for p in paths).encode("utf-8", "surrogateescape")


# -- a whole sync of one route -----------------------------------------------------------


def stage_journal(
    vault: VaultBase,
    config: SyncConfig,
    also: Sequence[str] = (),
    syncs: Sequence[RouteSync] = (),
) -> None:
    """Stage every change the journal holds (and the notes ``also`` names) into its
    route's index (the caller holds the vault lock): taking the journal stages it for
    every route at once. ``syncs``: routes already at hand, used as they are."""
    changes = take_changes(vault.path)
    if changes is not None and not changes and not also:
        return
    at_hand = {s.route.key: s for s in syncs}
    for route in config.routes:
        sync = at_hand.get(route.key) or RouteSync(vault, config, route)
        sync.stage(None if changes is None else [*changes, *also])


def sync_route(
    vault: VaultBase,
    config: SyncConfig,
    route: Route,
    *,
    fetch: bool = True,
    full: bool = False,
    wait: float | None = None,
) -> RouteReport:
    """Commit what changed, fetch (``fetch``, else only when a push is refused), merge,
    push; errors are raised (the caller decides whether one is a report's line)."""
    sync = RouteSync(vault, config, route)
    report = RouteReport(route)
    patience = max(net_timeout(), PATIENT)
    with sync.network_turn(wait):
        with vault._held(), vault._locked():
            stage_journal(vault, config, syncs=[sync])
            if full:
                sync.stage(None)
            head = sync.commit("notes changed here")
        known = sync.heads()[1]
        if fetch:
            known = sync.fetch(patience)
            report.fetched = True
            with vault._held(), vault._locked():
                sync.integrate(known, report)
                head = sync.heads()[0]
        for _ in range(MAX_ROUNDS):
            if head is None or head == known:
                return report
            if known is not None and sync.is_ancestor(head, known):
                return report  # the remote has it all already
            refused = sync.push(head, patience)
            if refused is None:
                report.pushed = True
                with suppress(AgentMemVaultError):  # a checkpoint only makes joining quicker
                    sync.checkpoint_if_due(patience)
                return report
            before = known
            known = sync.fetch(patience)
            report.fetched = True
            if refused != FETCH_FIRST and (
                known == before or (known is not None and sync.is_ancestor(known, head))
            ):
                raise sync.refused(refused)
            with vault._held(), vault._locked():
                sync.integrate(known, report)
                head = sync.heads()[0]
            time.sleep(random.uniform(0, 0.02))
    raise _too_busy(route)


def _too_busy(route: Route) -> UnavailableError:
    return UnavailableError(
        f"{route.label} kept moving: {MAX_ROUNDS} pushes in a row were overtaken by other "
        "machines; retry in a moment",
        code="sync_busy",
    )
