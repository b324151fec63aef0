"""Each entry's signature judged here, in process, against git's allowed signers format
(``vault/sync/verify.py``): keys made by ``ssh-keygen``, commits signed by git, and git's
own verdict (``%G?``) beside ours for every case where the two should agree."""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_mem_vault.vault.sync.verify import AllowedSigners, Verdict, fingerprint, verify_commit
from tests.cli_process import run_process
from tests.git_remote import git


@dataclass
class Lab:
    """A repository, keys by name, and an allowed signers file."""

    root: Path
    repo: Path

    def key(self, name: str, kind: str = "ed25519") -> Path:
        path = self.root / name
        if not path.exists():
            extra = ["-b", "2048"] if kind == "rsa" else []
            done = run_process(
                ["ssh-keygen", "-q", "-t", kind, *extra, "-N", "", "-C", name, "-f", path]
            )
            assert done.returncode == 0, done.stderr
        return path

    def public(self, name: str) -> str:
        return " ".join((self.root / f"{name}.pub").read_text().split()[:2])

    def signers(self, *lines: str) -> Path:
        path = self.root / "allowed_signers"
        path.write_text("\n".join(lines) + "\n")
        return path

    def commit(self, key: str | None, email: str, message: str = "entry", **env: str) -> str:
        """A commit by ``email``, signed with the key named ``key`` (None: unsigned)."""
        sign = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={self.root / key}"] if key else []
        who = {
            "GIT_AUTHOR_NAME": email.split("@")[0],
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": email.split("@")[0],
            "GIT_COMMITTER_EMAIL": email,
            **env,
        }
        flag = ["-S"] if key else ["--no-gpg-sign"]
        git(*sign, "commit", "-q", "--allow-empty", *flag, "-m", message, cwd=self.repo, env=who)
        return git("rev-parse", "HEAD", cwd=self.repo).strip()

    def raw(self, commit: str) -> bytes:
        return subprocess.run(
            ["git", "cat-file", "commit", commit], cwd=self.repo, capture_output=True, check=True
        ).stdout

    def write(self, raw: bytes) -> str:
        done = subprocess.run(
            ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
            cwd=self.repo,
            input=raw,
            capture_output=True,
            check=True,
        )
        return done.stdout.decode().strip()

    def gits_verdict(self, commit: str, signers: Path, *settings: str) -> str:
        """Git's own verdict: G good, U good by an unknown key, B bad, N none, …"""
        extra = [a for s in settings for a in ("-c", s)]
        return git(
            "-c",
            f"gpg.ssh.allowedSignersFile={signers}",
            *extra,
            "log",
            "-1",
            "--format=%G?",
            commit,
            cwd=self.repo,
        ).strip()


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lab:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("OpenSSH's ssh-keygen is not installed (Debian: openssh-client)")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = tmp_path / "repo"
    git("init", "-q", repo)
    return Lab(tmp_path, repo)


def _ours(
    lab: Lab, commit: str, signers: Path, revoked: str = "", at: float | None = None
) -> Verdict:
    listed = AllowedSigners.parse(signers.read_text(), revoked)
    return verify_commit(lab.raw(commit), listed, at)


def test_in_process_verdicts_agree_with_git_verify_commit(lab: Lab) -> None:
    for name, kind in (("ada", "ed25519"), ("eve", "ed25519"), ("cy", "ecdsa"), ("rho", "rsa")):
        lab.key(name, kind)
    signers = lab.signers(
        f'ada@example.com namespaces="git" {lab.public("ada")}',
        f"cy@example.com {lab.public('cy')}",
        f"rho@example.com {lab.public('rho')}",
    )
    good = {n: lab.commit(n, f"{n}@example.com") for n in ("ada", "cy", "rho")}
    unknown = lab.commit("eve", "eve@example.net")
    unsigned = lab.commit(None, "ada@example.com")
    raw = lab.raw(good["ada"])
    tampered = lab.write(raw.replace(b"\n\nentry", b"\n\nentry, and run rm -rf /"))
    # Signed by a listed key, but for a namespace other than git's.
    payload = raw.split(b"\ngpgsig ")[0] + b"\n\nentry for another use\n"
    sig_file = lab.root / "payload"
    sig_file.write_bytes(payload)
    signed = run_process(
        ["ssh-keygen", "-Y", "sign", "-n", "file", "-f", lab.root / "ada", sig_file]
    )
    assert signed.returncode == 0, signed.stderr
    armored = (lab.root / "payload.sig").read_bytes().strip().split(b"\n")
    head, _, message = payload.partition(b"\n\n")
    header = b"gpgsig " + armored[0] + b"".join(b"\n " + line for line in armored[1:])
    other_use = lab.write(head + b"\n" + header + b"\n\n" + message)

    cases = {
        **{c: ("G", True, None) for c in good.values()},
        unknown: ("U", False, "unknown_key"),
        unsigned: ("N", False, "unsigned"),
        tampered: ("B", False, "bad_signature"),
        other_use: ("B", False, "not_for_git"),
    }
    for commit, (gits, verified, why) in cases.items():
        assert lab.gits_verdict(commit, signers) == gits, commit
        ours = _ours(lab, commit, signers)
        assert (ours.verified, ours.why) == (verified, why), (commit, ours)
    assert _ours(lab, good["cy"], signers).principal == "cy@example.com"
    # The key a verdict names is the one ssh-keygen prints.
    printed = run_process(["ssh-keygen", "-l", "-f", lab.root / "ada.pub"]).stdout.split()[1]
    assert _ours(lab, good["ada"], signers).key == printed

    # Revoked: git refuses it too; here every entry of that key is revoked.
    revoked = lab.root / "revoked"
    revoked.write_text(lab.public("ada") + "\n")
    assert lab.gits_verdict(good["ada"], signers, f"gpg.ssh.revocationFile={revoked}") != "G"
    ours = _ours(lab, good["ada"], signers, revoked.read_text())
    assert (ours.verified, ours.why) == (False, "revoked")


def test_a_backdated_commit_by_an_expired_key_is_unverified_though_git_says_good(
    lab: Lab,
) -> None:
    lab.key("ada")
    signers = lab.signers(f'ada@example.com valid-before="20250101" {lab.public("ada")}')
    dated = "2024-06-01T12:00:00Z"
    commit = lab.commit("ada", "ada@example.com", GIT_AUTHOR_DATE=dated, GIT_COMMITTER_DATE=dated)
    # git judges the key at the date the commit claims, which its writer chose.
    assert lab.gits_verdict(commit, signers) == "G"
    ours = _ours(lab, commit, signers)  # judged now: the key had expired
    assert (ours.verified, ours.why) == (False, "expired")
    # Seen while the key was still valid, it counts.
    assert _ours(lab, commit, signers, at=time.mktime((2024, 7, 1, 0, 0, 0, 0, 0, -1))).verified


def test_a_revoked_key_is_unverified_for_every_entry_whatever_its_date(lab: Lab) -> None:
    lab.key("ada")
    signers = lab.signers(f"ada@example.com {lab.public('ada')}")
    revoked = f"# ada's laptop was stolen\n{lab.public('ada')} ada\n"
    for dated in ("2020-01-01T00:00:00Z", "2026-06-01T00:00:00Z"):
        commit = lab.commit(
            "ada", "ada@example.com", dated, GIT_AUTHOR_DATE=dated, GIT_COMMITTER_DATE=dated
        )
        early = time.mktime((2019, 1, 1, 0, 0, 0, 0, 0, -1))
        for at in (early, None):
            ours = _ours(lab, commit, signers, revoked, at)
            assert (ours.verified, ours.why) == (False, "revoked")


def test_a_listed_key_signing_in_someone_elses_name_is_not_verified(lab: Lab) -> None:
    """A commit that names Ada as its author, signed with Eve's listed key: git says good
    (it asks only whose the key is); here the key must be the author's."""
    lab.key("ada")
    lab.key("eve")
    signers = lab.signers(
        f"ada@example.com {lab.public('ada')}", f"eve@example.com {lab.public('eve')}"
    )
    forged = lab.commit("eve", "ada@example.com")
    assert lab.gits_verdict(forged, signers) == "G"
    ours = _ours(lab, forged, signers)
    assert (ours.verified, ours.why, ours.principal) == (False, "claim_mismatch", "eve@example.com")
    # A line for many people of a domain takes any of them.
    team = lab.signers(f'"*@example.com,!eve@example.com" {lab.public("ada")}')
    assert _ours(lab, lab.commit("ada", "bo@example.com"), team).verified
    assert _ours(lab, lab.commit("ada", "eve@example.com"), team).why == "claim_mismatch"


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("ada@example.com", "needs principals, a key type and a key"),
        ("ada@example.com ssh-dss AAAAB3Nza", "no key type"),
        ('ada@example.com valid-before="2025" ssh-ed25519 AAAA', "YYYYMMDD"),
        ("ada@example.com ssh-ed25519 not!base64", "not base64"),
        ('ada@example.com namespaces="git ssh-ed25519 AAAA', "quote"),
        # Misspelt, an option would be dropped here and the line taken wider than meant.
        ('ada@example.com valid_before="20200101" ssh-ed25519 AAAA', "not one ssh-keygen knows"),
    ],
)
def test_a_signers_file_line_that_does_not_parse_is_named(line: str, error: str) -> None:
    with pytest.raises(ValueError, match=error) as raised:
        AllowedSigners.parse(f"# the team\n{line}\n", source="allowed_signers")
    assert "allowed_signers:2" in str(raised.value)


def test_fingerprints_are_sha256_as_ssh_keygen_prints_them(lab: Lab) -> None:
    lab.key("ada")
    blob = AllowedSigners.parse(f"a@b {lab.public('ada')}").lines[0].key
    printed = run_process(["ssh-keygen", "-l", "-f", lab.root / "ada.pub"]).stdout.split()[1]
    assert fingerprint(blob) == printed


def test_entries_are_verified_in_process_without_ssh_keygen(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check of a common key runs no program: so a machine joining a team checks
    thousands of entries within a session start (``benchmarks/bench_signing.py``)."""
    lab.key("ada")
    signers = AllowedSigners.parse(f"ada@example.com {lab.public('ada')}")
    raws = [lab.raw(lab.commit("ada", "ada@example.com", f"entry {i}")) for i in range(5)]
    monkeypatch.setenv("PATH", str(lab.root / "nothing"))
    assert all(verify_commit(raw, signers).verified for raw in raws)


def test_a_certificate_is_checked_by_ssh_keygen_and_its_revoked_authority_refused(
    lab: Lab,
) -> None:
    lab.key("ca")
    lab.key("ada")
    ca, ada = lab.root / "ca", lab.root / "ada.pub"
    issued = run_process(["ssh-keygen", "-q", "-s", ca, "-I", "ada", "-n", "ada@example.com", ada])
    assert issued.returncode == 0, issued.stderr
    commit = lab.commit("ada-cert.pub", "ada@example.com")
    signers = lab.signers(f"ada@example.com cert-authority {lab.public('ca')}")
    assert lab.gits_verdict(commit, signers) == "G"
    assert _ours(lab, commit, signers).verified
    revoked = lab.root / "revoked"
    revoked.write_text(lab.public("ca") + "\n")
    assert lab.gits_verdict(commit, signers, f"gpg.ssh.revocationFile={revoked}") == "B"
    ours = _ours(lab, commit, signers, revoked.read_text())
    assert (ours.verified, ours.why) == (False, "revoked")


def test_hostile_signatures_get_a_verdict_and_never_an_exception(lab: Lab) -> None:
    """Whatever a commit pushed by anyone holds, checking it answers (and at once: a
    header of blanks once took minutes to match)."""
    lab.key("ada")
    signers = AllowedSigners.parse(
        f"ada@example.com {lab.public('ada')}\n*@example.com cert-authority {lab.public('ada')}"
    )
    raw = lab.raw(lab.commit("ada", "ada@example.com"))
    head, _, message = raw.partition(b"\n\n")
    plain = b"\n".join(line for line in head.split(b"\n") if not line.startswith((b"gpgsig", b" ")))

    def signed(*lines: bytes) -> bytes:
        return plain + b"\ngpgsig " + b"\n ".join(lines) + b"\n\n" + message

    begin, end = b"-----BEGIN SSH SIGNATURE-----", b"-----END SSH SIGNATURE-----"
    blank = b" " * 3000

    def string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    truncated = base64.b64encode(b"SSHSIG\0\0\0\1\0\0\0\x05ab")
    inner = string(b"ssh-ed25519") + string(b"x" * 64)
    parts = (string(b"\0\0\0\xffab"), string(b"git"), string(b""), string(b"sha512"))
    bad_key = base64.b64encode(b"SSHSIG\0\0\0\1" + b"".join(parts) + string(inner))
    cases = {
        "blanks": signed(begin, blank, blank, end[:-1]),  # and no end line
        "too long": signed(begin, b"A" * 20_000, end),
        "not base64": signed(begin, b"!!!!", end),
        "truncated": signed(begin, truncated, end),
        "a key that is not one": signed(begin, bad_key, end),
        "no end": signed(begin, b"AAAA"),
        "pgp": signed(b"-----BEGIN PGP SIGNATURE-----", b"AAAA", b"-----END PGP SIGNATURE-----"),
    }
    for name, hostile in cases.items():
        verdict = verify_commit(hostile, signers)
        assert not verdict.verified and verdict.why in ("bad_signature", "not_ssh"), name
