"""The vault's sync operations: join a remote, leave it, sync now, look, catch up.

One function each; ``Vault`` exposes them (``service/syncing.py``), and the CLI and the
session hook call them from there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import AgentMemVaultError, ConflictError, InvalidInputError, NotFoundError
from .engine import PATIENT, RouteSync, net_timeout, sync_route
from .gate import Held, allow_secret
from .gitcmd import Git
from .identity import identity
from .journal import note_changes
from .local import RouteReport
from .privacy import add_pattern
from .privacy import patterns as private_patterns
from .private_notes import release_pattern, travelled_matching
from .route_status import RouteStatus, status
from .routes import (
    SYNC_DIR,
    VAULT_REF,
    Route,
    SyncConfig,
    check_url,
    load_config,
    new_config,
    project_ref,
    route_git_dir,
    route_named,
    save_config,
)
from .signing import Chosen, choose_key
from .stranded import reopen_stranded
from .syncer import ensure_syncer, idle_limit, in_use_at, mark_in_use, syncer_running
from .team import remote_layout
from .team_branch import branch_ref
from .trust_ops import (
    TrustStatus,
    trust_policy,
    trust_signers,
    trust_status,
    untrusted_notes,
    vouch,
)
from .upgrade import upgrade
from .view import FRESH, QUICK, STALE, ask_after, describe_age, failures, view_age

if TYPE_CHECKING:
    from ..ops.base import VaultBase

__all__ = [
    "BUDGET_ENV",
    "RouteStatus",
    "Signing",
    "SyncReport",
    "TrustStatus",
    "add_pattern",
    "allow",
    "catch_up",
    "join_project",
    "join_remote",
    "leave",
    "private_patterns",
    "release_pattern",
    "reopen_stranded",
    "sign_route",
    "signing_key",
    "status",
    "sync_all",
    "travelled_matching",
    "trust_policy",
    "trust_signers",
    "trust_status",
    "untrusted_notes",
    "upgrade",
    "vouch",
]

BUDGET_ENV = "AGENT_MEM_VAULT_SYNC_BUDGET"
"""Seconds the session-start hook waits for the remote before it goes on with what is
here (default 2)."""


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What a ``sync`` did, route by route."""

    routes: tuple[RouteReport, ...] = ()

    @property
    def ok(self) -> bool:
        return all(r.error is None for r in self.routes)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "routes": [r.to_dict() for r in self.routes]}


# -- joining and leaving ------------------------------------------------------------------


def join_remote(
    vault: VaultBase, remote: str, sign: str | None = None, branch: str | None = None
) -> SyncReport:
    """Send the whole vault through ``remote`` (a URL or path git accepts): a remote with
    notes already is merged with this vault's; ``sign``: the key every commit it sends is
    signed with (``choose_key``); ``branch``: the one branch its entries ride, for a
    host that takes only branches (``team_branch.py``)."""
    url = check_url(remote)
    if "://" not in url and ":" not in url.split("/")[0] and not os.path.isabs(url):
        url = str(Path(url).expanduser().absolute())  # a path: the same from any folder
    config = load_config(vault.path) or new_config()
    current = config.vault_route
    if current is not None and current.remote != url:
        raise ConflictError(
            f"the vault already syncs with {current.remote}; to change the remote, leave it "
            "first ('agent-mem-vault sync remove'), then join the new one",
            code="sync_already",
        )
    sign = sign or (current.sign if current is not None else None)
    route = Route(remote=url, ref=VAULT_REF, url=url, sign=sign)
    if branch is not None:
        probe = Git(vault.path, vault.path, vault.path / SYNC_DIR / "probe.index")
        route = replace(route, layout=2, branch=branch_ref(probe, branch))
    folder = vault.path / SYNC_DIR / f"{route.key}.git"
    made = not folder.exists()
    if made:
        vault._require_vault()
        sync_folder = folder.parent
        if not sync_folder.exists():
            sync_folder.mkdir()
            cleanup = sync_folder  # a join that fails leaves no sync folder behind
        else:
            cleanup = folder
        _plain_git(vault.path, "init", "--quiet", "--bare", str(folder))
    _git(folder, "config", "remote.origin.url", url)
    # A push then moves the remote-tracking ref itself (one git process less per push).
    _git(folder, "config", "remote.origin.fetch", f"+{VAULT_REF}:refs/remotes/origin/main")
    return _join(vault, config.with_route(route), route, cleanup=cleanup if made else None)


def join_project(
    vault: VaultBase,
    namespace: str,
    repo: str | os.PathLike[str],
    remote: str = "origin",
    sign: str | None = None,
    branch: str | None = None,
) -> SyncReport:
    """Send ``namespace`` through the project's own repository (the clone at ``repo``,
    its remote ``remote``), on refs of its own, or on the branch ``branch``."""
    from ..format.namespaces import validate_namespace

    namespace = validate_namespace(namespace)
    work = Path(repo).expanduser().absolute()
    git_dir = _common_git_dir(work)
    probe = Git(git_dir, work, git_dir / "index")
    found = probe.run("config", "--get", f"remote.{remote}.url", check=False)
    url = found.out.decode("utf-8", "replace").strip()
    if found.status != 0 or not url:
        raise NotFoundError(
            f"the repository at {work} has no remote {remote!r}; add it (git remote add "
            f"{remote} URL) or name another with --remote",
            code="remote_not_found",
        )
    shown = _masked(url)
    ref = project_ref(namespace)
    if probe.run("check-ref-format", ref, check=False).status != 0:
        raise InvalidInputError(
            f"the namespace {namespace!r} cannot name a git ref ({ref}); a project route "
            "needs a namespace without '..' and with no segment ending in '.lock'",
            code="invalid_namespace",
            field="namespace",
        )
    config = load_config(vault.path) or new_config()
    current = config.route_for(namespace)
    if sign is None and current is not None and current.namespace == namespace:
        sign = current.sign
    route = Route(
        remote=remote, ref=ref, namespace=namespace, repo=str(git_dir), url=shown, sign=sign
    )
    if branch is not None:
        route = replace(route, layout=2, branch=branch_ref(probe, branch))
    return _join(vault, config.with_route(route), route, cleanup=None)


@dataclass(frozen=True, slots=True)
class Signing:
    """A route set to sign what it sends (``sync init --sign``)."""

    route: Route
    chosen: Chosen
    principal: str | None
    """Whom the team's allowed signers file names for the key: the route's git email;
    None while git names nobody for the route."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.route.url or self.route.remote,
            "namespace": self.route.namespace,
            "key": self.chosen.key,
            "signs_with": self.chosen.label,
            "principal": self.principal,
            "signers_line": self.chosen.signers_line(self.principal or "you@example.com"),
        }


def signing_key(vault: VaultBase, key: str | None, repo: Path | None = None) -> Chosen:
    """The SSH key a route will sign with, tried once (``signing.choose_key``), before a
    route is made or changed: a key that cannot sign changes nothing."""
    git_dir = _common_git_dir(repo) if repo is not None else None
    if git_dir is None:
        config = load_config(vault.path)
        route = None if config is None else config.vault_route
        if route is not None:
            git_dir = route_git_dir(vault.path, route)
    return choose_key(key, git_dir)


def sign_route(vault: VaultBase, namespace: str | None, chosen: Chosen) -> Signing:
    """Sign every commit the route of ``namespace`` (None: the vault's) sends with
    ``chosen`` from now on; what waits to be sent goes out signed."""
    config, route = route_named(
        vault.path,
        namespace,
        "join one with signing on: 'agent-mem-vault sync init REMOTE --sign' (or --project --sign)",
    )
    signed = replace(route, sign=chosen.key)
    with vault._held(), vault._locked():
        save_config(vault.path, config.with_route(signed))
    ensure_syncer(vault.path)
    return _signing(vault, config, signed, chosen)


def _signing(vault: VaultBase, config: SyncConfig, route: Route, chosen: Chosen) -> Signing:
    who = identity(route_git_dir(vault.path, route))
    return Signing(route, chosen, None if who is None else who.email)


def leave(vault: VaultBase, namespace: str | None = None) -> Route:
    """Stop sending notes through a route (the vault's, or ``namespace``'s); the notes
    stay, and so does the remote. The route that was left."""
    config, route = route_named(
        vault.path, namespace, "'agent-mem-vault sync --status' lists the routes there are"
    )
    with vault._held(), vault._locked():
        rest = config.without(route)
        if rest.routes:
            save_config(vault.path, rest)
        else:
            (vault.path / SYNC_DIR / "config.json").unlink()
        for name in (
            f"{route.key}.index",
            f"{route.key}.state.json",
            f"{route.key}.lock",
            f"{route.key}.fold.sqlite",
            f"{route.key}.trust.sqlite",
            f"{route.key}.trust.sqlite-wal",
            f"{route.key}.trust.sqlite-shm",
            f"{route.key}.trust.sqlite.stamp",
        ):
            (vault.path / SYNC_DIR / name).unlink(missing_ok=True)
        if route.repo is None:
            shutil.rmtree(vault.path / SYNC_DIR / f"{route.key}.git", ignore_errors=True)
    return route


def _join(vault: VaultBase, config: SyncConfig, route: Route, cleanup: Path | None) -> SyncReport:
    """The first sync of a new route: everything here is staged, the remote is fetched
    (if that fails, nothing was changed: the route is not kept), then merged and pushed."""
    vault._require_vault()
    folder = vault.path / SYNC_DIR
    fresh = not folder.exists()
    folder.mkdir(exist_ok=True)
    try:
        layout = route.layout if route.branch else remote_layout(RouteSync(vault, config, route))
        if layout != route.layout:
            route = replace(route, layout=layout)
            config = config.with_route(route)
        sync = RouteSync(vault, config, route)
        with sync.network_turn():
            theirs = sync.fetch(max(net_timeout(), PATIENT))  # a whole vault may arrive
    except BaseException:
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
        for name in (f"{route.key}.state.json", f"{route.key}.lock"):
            (folder / name).unlink(missing_ok=True)
        if fresh:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    with vault._held(), vault._locked():
        save_config(vault.path, config)
    report = RouteReport(route)
    try:
        with sync.network_turn(), vault._held(), vault._locked():
            sync.stage(None)
            sync.commit("notes of this vault")
            sync.integrate(theirs, report)
        pushed = sync_route(vault, config, route, fetch=False)
        report.pushed = pushed.pushed
        report.merged.extend(pushed.merged)
        report.arrived.extend(pushed.arrived)
    except AgentMemVaultError as exc:
        report.error = exc
        ensure_syncer(vault.path)
    return SyncReport((report,))


def _git(git_dir: Path, *args: str) -> None:
    Git(git_dir, git_dir.parent, git_dir / "index").run(*args)


def _plain_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """``git ARGS`` in ``cwd`` with none of the caller's ``GIT_*`` settings; None if
    ``cwd`` is no folder."""
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        )
    except FileNotFoundError:
        if not cwd.is_dir():
            return None
        from ...core.errors import UnavailableError

        raise UnavailableError(
            "the git command was not found on PATH; install git (2.29 or newer) to sync the vault",
            code="git_missing",
        ) from None
    except NotADirectoryError:
        return None


def _common_git_dir(work: Path) -> Path:
    """The git folder of the clone at ``work`` (shared by its worktrees)."""
    out = _plain_git(work, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if out is None or out.returncode != 0 or not out.stdout.strip():
        raise NotFoundError(
            f"{work} is not a git repository; run this in a clone of the project (or pass "
            "--repo PATH)",
            code="repo_not_found",
        )
    return Path(out.stdout.strip())


def _masked(url: str) -> str:
    """``url`` as messages show it: a password in it (a CI runner's token) is hidden."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        auth, _, host = rest.partition("@")
        user = auth.split(":", 1)[0]
        return f"{scheme}://{user}{':***' if ':' in auth else ''}@{host}"
    return url


# -- syncing ----------------------------------------------------------------------------


def sync_all(vault: VaultBase) -> SyncReport:
    """Sync every route now: commit, fetch, merge, push; each route's failure is its
    report's ``error``."""
    config = load_config(vault.path)
    if config is None:
        raise NotFoundError(
            f"{vault.path} syncs with no remote; join one with 'agent-mem-vault sync init "
            "REMOTE' (the whole vault) or 'agent-mem-vault sync init --project' (this "
            "project's namespace, through its repository)",
            code="no_sync_route",
        )
    reports = []
    for route in config.routes:
        try:
            reports.append(sync_route(vault, config, route))
        except AgentMemVaultError as exc:
            reports.append(RouteReport(route, error=exc))
    if not all(r.error is None for r in reports):
        ensure_syncer(vault.path)  # it tries again until the remote answers
    return SyncReport(tuple(reports))


def catch_up(
    vault: VaultBase,
    namespace: str | None,
    budget: float | None = None,
    doing: str = "this session starts with",
) -> str:
    """Before a session start or a view: what the remote has for ``namespace`` (or for
    the whole vault); '' when what is here is what the remote had moments ago, else one
    line saying why what is here is used (``doing`` it: "this session starts with"), and
    how old it is when that is over a minute.

    Never waits on the network when it need not (``view.py``): a view the syncer
    fetched a few seconds ago is used as it is, a remote that did not answer is not
    asked again until its back-off has passed (and then only for ``view.QUICK``
    seconds); otherwise it fetches and merges within ``budget`` seconds.
    """
    config = load_config(vault.path)
    if config is None:
        return ""
    route = config.route_for(namespace) if namespace is not None else config.vault_route
    if route is None:
        return ""
    now = time.time()
    looked = in_use_at(vault.path)
    mark_in_use(vault.path)  # the syncer watches the remote while an agent here is in use
    ensure_syncer(vault.path)
    sync = RouteSync(vault, config, route)
    state = sync.state()
    age = view_age(state, now)
    # The syncer fetches every few seconds once an agent here was in use: what it
    # fetched holds all that another machine sent before that, and asking the remote
    # here too would only wait behind it. Said only when it is old, or failing.
    watched = looked is not None and now - looked < idle_limit()
    if watched and syncer_running(vault.path):
        if failures(state) and (age is None or age >= FRESH):
            return _here_line(_last_said(state, route), doing, age)
        if age is None or age > STALE:
            return _here_line(f"{route.label} was not fetched lately", doing, age)
        return ""
    after = ask_after(state)
    if after is not None and now < after:
        said = _last_said(state, route)
        return _here_line(f"{said} (asked again in {after - now:.0f} s)", doing, age)
    limit = budget if budget is not None else _budget()
    if failures(state):
        limit = min(limit, QUICK)
    started = time.monotonic()
    try:
        with sync.network_turn(limit):
            left = max(0.05, limit - (time.monotonic() - started))
            theirs = sync.fetch(timeout=left)
            with vault._held(), vault._locked():
                sync.integrate(theirs, RouteReport(route))
    except AgentMemVaultError as exc:
        return _here_line(exc.message.split("; ")[0], doing, age)
    return ""


def _last_said(state: dict[str, Any], route: Route) -> str:
    """What the remote's last failure was, in the words of its error, without the fix."""
    error = state.get("error") or {}
    return str(error.get("message") or f"{route.label} did not answer").split("; ")[0]


def _here_line(why: str, doing: str, age: float | None) -> str:
    """The one line of a session or a view that goes on with the notes on this machine."""
    if age is None:
        seen = ""
    elif age > STALE:
        seen = f", as of the remote {describe_age(age)} ago"
    else:
        seen = ", as of the remote a moment ago"
    return f"agent-mem-vault: {why}; {doing} the notes on this machine{seen}"


def _budget() -> float:
    try:
        value = float(os.environ.get(BUDGET_ENV, "") or 2.0)
    except ValueError:
        return 2.0
    return value if value > 0 else 2.0


def allow(vault: VaultBase, path: str, line: int, kind: str | None) -> list[Held]:
    """A person lets the findings on ``line`` of ``path`` go (``gate.allow_secret``); the
    note is named to the syncer again, so it goes out now."""
    try:
        text = (vault.path / path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise NotFoundError(f"cannot read {path}: {exc.strerror}", code="note_not_found") from None
    allowed = allow_secret(vault.path, path, text, line, kind)
    with vault._held(), vault._locked():
        note_changes(vault.path, [path])
    ensure_syncer(vault.path)
    return allowed
