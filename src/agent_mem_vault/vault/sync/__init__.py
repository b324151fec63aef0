"""A vault that travels: its notes committed and pushed with the ``git`` command.

A vault joins a remote in one of two ways (``routes.py``): the whole vault
through a git remote of its own, or one project's namespace through that
project's own repository, on a ref that is not a branch. What is configured
lives in ``<vault>/.agent-mem-vault-sync/`` (``routes.SYNC_DIR``); a vault
without it runs no git process and imports none of this package.

- ``routes``: what is configured, and which notes go where.
- ``gitcmd``: running ``git`` (timeouts, the user's credentials, errors that
  name the remote and the fix).
- ``port``: sync's side of the operations' port (``ops/port.py``), which the
  composition point (``vault/plug.py``) hands a vault with a route.
- ``journal``: the notes changed since the last commit, told by every write.
- ``local``: stage, commit and merge on this machine; ``engine``: a route's
  fetch, push and checkpoints, and a whole sync; ``trees``: a commit's tree
  made along the changed paths; ``arrivals``: what a fetch brought, merged by
  ``format/merge.py``'s rules.
- How a remote keeps the notes: ``layout`` names the refs and the marker;
  ``team``, ``entries`` and ``fold``: a log per machine, folded per note by
  every reader; ``team_checkpoint``, ``prune`` and ``team_branch``: its
  checkpoints, its claim refs let go, and the same entries on one branch;
  ``upgrade``: a route of one log moved there. ``log`` and ``log_fetch``: one log
  for every machine (layout 1).
- ``claim``: a read that counts once the remote took it; ``team_claim``: what a
  read knows of the team; ``inflight`` and ``stranded``: a read that stopped
  half-way.
- ``syncer``: finding, starting and stopping the background syncer;
  ``background``: its life, committing and pushing each write.
- ``operations``: the sync commands of ``Vault`` (join, leave, sync, upgrade);
  ``route_status``: where each route stands.

The top layer of the vault: it may import every layer below (``vault.service``
excepted: it drives the vault it is handed, a ``VaultBase``), and nothing below
imports it but the composition point.

docs/sync.md is the manual.
"""
