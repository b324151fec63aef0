"""What looking for secrets costs: a note's worth of text, and a transcript's.

    .venv/bin/python benchmarks/bench_secrets.py            # 2,000 calls a row
    .venv/bin/python benchmarks/bench_secrets.py --quick    # 200

Every piece of an automatic handoff's transcript text is redacted
(``core/secrets.py``), so the figure that matters is the time per 10 KB of
ordinary text, which is mostly what the shapes must pass over: prose that says
token, secret and password, git hashes, UUIDs, TIDs, code and paths, with no
secret in it (the ``no secret`` rows). The ``one of each`` row holds one
example of every shape. The figures are the median and the 95th percentile of
single calls, in milliseconds, in one process with everything imported.
"""

from __future__ import annotations

import argparse
import uuid

from agent_mem_vault.core.ids import next_tid
from agent_mem_vault.core.secrets import find_secrets, redact
from measure import call_times, ms_p95

_LINES = (
    "The token refresh in auth/session.py retries twice; the secret rotation job runs nightly.",
    "Commit {hash} moved the password reset to the worker; see handoff {tid}.",
    "request {uuid} failed with 502 after 30 s; max_tokens=4096, input_tokens: 1,234",
    "def rotate(key_id: str) -> None:  # the key lives in the team's secret store",
    "pwd: /srv/app; cwd=/srv/app/api; ran `pytest -x tests/test_tokens.py` (exit 0)",
    "- [x] move the API key lookup behind settings.api_key_source",
    "Next: batch the backfill in migrations/0007 (1000 rows), measure lock time.",
)

_ONE_OF_EACH = "\n".join(
    [
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE",
        "-----END OPENSSH PRIVATE KEY-----",
        "curl -H 'Authorization: Bearer abcdef1234567890XYZ' https://api.example.com",
        "postgres://app:S3cr3t-pw@db.internal:5432/app",
        "sk-ant-api03-" + "Ab1_" * 20,
        "sk-proj-" + "A1b2C3d4" * 4,
        "ghp_" + "a1B2" * 9,
        "glpat-" + "xY12" * 5,
        "AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "xoxb-123456789012-abcdefghij",
        "sk_live_0123456789abcdef",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sflKxwRJSMeKKF2QT4",
        "DB_PASSWORD=correct-horse-battery",
    ]
)


def ordinary_text(size: int) -> str:
    """About ``size`` characters of note text with no secret in it."""
    lines: list[str] = []
    length, i = 0, 0
    while length < size:
        line = _LINES[i % len(_LINES)].format(
            hash=f"{i:040x}"[-40:], tid=next_tid(), uuid=uuid.UUID(int=i * 7919)
        )
        lines.append(line)
        length += len(line) + 1
        i += 1
    return "\n".join(lines)[:size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 calls a row, not 2,000")
    args = parser.parse_args()
    calls = 200 if args.quick else 2000
    note = ordinary_text(10_000)
    assert find_secrets(note) == [], "the ordinary text must hold no secret"
    with_secrets = ordinary_text(10_000 - len(_ONE_OF_EACH)) + "\n" + _ONE_OF_EACH
    transcript = ordinary_text(1_000_000)
    rows = [
        ("find, 10 KB, no secret", lambda _: find_secrets(note), calls),
        ("redact, 10 KB, no secret", lambda _: redact(note), calls),
        ("redact, 10 KB, one of each shape", lambda _: redact(with_secrets), calls),
        ("redact, 1 MB, no secret", lambda _: redact(transcript), max(5, calls // 100)),
    ]
    print("| what | median (p95) |")
    print("| --- | --- |")
    for what, call, n in rows:
        print(f"| {what} | {ms_p95(call_times(call, n, warmup=3), 2)} |")


if __name__ == "__main__":
    main()
