"""What checking an arriving entry costs: in process (``vault/sync/verify.py``) against git.

    .venv/bin/python benchmarks/bench_verify.py            # 200 commits, 5 rounds
    .venv/bin/python benchmarks/bench_verify.py --quick    # 50 commits, 3 rounds

One repository of commits signed with an ed25519 key made by ``ssh-keygen`` in a
temporary HOME, and an allowed signers file listing it. Each round checks every
commit both ways, in a rotating order: the bytes of each commit read with one
``git cat-file --batch`` and checked here (what a fetch does), and ``git
verify-commit`` per commit (what asking git costs: it runs ``ssh-keygen`` twice).
The figure is the median time per entry of each, and their ratio; and, where gpg is
installed, the time per entry signed with an OpenPGP key listed beside the signers
file (checked with ``gpgv``, one process an entry).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agent_mem_vault.vault.sync.verify import AllowedSigners, verify_commit


def _git(repo: Path, *argv: str, env: dict[str, str] | None = None, data: bytes = b"") -> bytes:
    done = subprocess.run(
        ["git", *argv], cwd=repo, env=env, input=data, capture_output=True, check=True
    )
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 commits, 3 rounds")
    args = parser.parse_args()
    count, rounds = (50, 3) if args.quick else (200, 5)
    with tempfile.TemporaryDirectory(prefix="amv-bench-verify-") as folder:
        base = Path(folder)
        env = {**os.environ, "HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1"}
        key = base / "ada"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, env=env
        )
        public = " ".join(key.with_suffix(".pub").read_text().split()[:2])
        signers = base / "allowed_signers"
        signers.write_text(f'ada@example.com namespaces="git" {public}\n')
        repo = base / "repo"
        _git(base, "init", "-q", str(repo), env=env)
        who = {
            "GIT_AUTHOR_NAME": "Ada",
            "GIT_AUTHOR_EMAIL": "ada@example.com",
            "GIT_COMMITTER_NAME": "Ada",
            "GIT_COMMITTER_EMAIL": "ada@example.com",
        }
        signing = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={key}"]
        for i in range(count):
            _git(repo, *signing, "commit", "-q", "--allow-empty", "-S", "-m", f"entry {i}",
                 env={**env, **who})  # fmt: skip
        commits = _git(repo, "rev-list", "HEAD", env=env).decode().split()
        listed = AllowedSigners.parse(signers.read_text())
        settings = ["-c", f"gpg.ssh.allowedSignersFile={signers}"]

        def ours() -> float:
            started = time.perf_counter()
            raw = _git(repo, "cat-file", "--batch", env=env, data="\n".join(commits).encode())
            pos, good = 0, 0
            for _ in commits:
                end = raw.index(b"\n", pos)
                size = int(raw[pos:end].rsplit(b" ", 1)[1])
                good += verify_commit(raw[end + 1 : end + 1 + size], listed).verified
                pos = end + 1 + size + 1
            assert good == len(commits)
            return (time.perf_counter() - started) / len(commits)

        def gits() -> float:
            started = time.perf_counter()
            for commit in commits:
                _git(repo, *settings, "verify-commit", commit, env=env)
            return (time.perf_counter() - started) / len(commits)

        times: dict[str, list[float]] = {"in process": [], "git verify-commit": []}
        ways = [("in process", ours), ("git verify-commit", gits)]
        for i in range(rounds):
            for name, way in ways[i % 2 :] + ways[: i % 2]:
                times[name].append(way())
        print(f"{count} signed entries, {rounds} rounds, load {os.getloadavg()[0]:.1f}")
        medians = {name: statistics.median(found) for name, found in times.items()}
        for name, median in medians.items():
            print(f"  {name:<18} {median * 1000:7.3f} ms an entry (median of rounds)")
        ratio = medians["git verify-commit"] / medians["in process"]
        print(f"  git verify-commit / in process: {ratio:.0f}x")
        if shutil.which("gpg") and shutil.which("gpgv"):
            openpgp = _openpgp(base, env, who, min(count, 50), rounds)
            print(f"  OpenPGP, with gpgv: {openpgp * 1000:7.3f} ms an entry (median of rounds)")


def _openpgp(
    base: Path, env: dict[str, str], who: dict[str, str], count: int, rounds: int
) -> float:
    """The median time to check one entry signed with an OpenPGP key listed beside the
    signers file (``vault/sync/openpgp.py``: one ``gpgv`` an entry)."""
    home = base / "gnupg"
    home.mkdir(mode=0o700)
    env = {**env, "GNUPGHOME": str(home)}
    gpg = ["gpg", "--batch", "--passphrase", ""]
    subprocess.run([*gpg, "--quick-gen-key", "Ada <ada@example.com>", "ed25519", "sign", "never"],
                   check=True, env=env, capture_output=True)  # fmt: skip
    repo = base / "pgp-repo"
    _git(base, "init", "-q", str(repo), env=env)
    signing = ["-c", "gpg.format=openpgp", "-c", "user.signingkey=ada@example.com"]
    for i in range(count):
        _git(repo, *signing, "commit", "-q", "--allow-empty", "-S", "-m", f"entry {i}",
             env={**env, **who})  # fmt: skip
    exported = subprocess.run([*gpg, "--export", "ada@example.com"], check=True, env=env,
                              capture_output=True).stdout  # fmt: skip
    listed = AllowedSigners.parse("", openpgp=exported)
    commits = _git(repo, "rev-list", "HEAD", env=env).decode().split()
    raws = [_git(repo, "cat-file", "commit", c, env=env) for c in commits]
    rounds_taken = []
    for _ in range(rounds):
        started = time.perf_counter()
        assert all(verify_commit(raw, listed).verified for raw in raws)
        rounds_taken.append((time.perf_counter() - started) / len(raws))
    return statistics.median(rounds_taken)


if __name__ == "__main__":
    main()
