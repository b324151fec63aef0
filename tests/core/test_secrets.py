"""The one list of the shapes secrets take: each found and named, and what only looks like one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_mem_vault.core.secrets import SHAPES, find_secrets, redact

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agents.md"

# (shape name, text with a secret, the secret that must be gone, text that must stay)
SECRETS = [
    (
        "private key",
        "k=-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----",
        "b3Bl",
        "k=",
    ),
    ("private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEcut", "MIIEcut", ""),
    (
        "private key",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQdGBF\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQdGBF",
        "",
    ),
    (
        "authorization header",
        "Authorization: Basic dXNlcjpwYXNz",
        "dXNlcjpwYXNz",
        "Authorization: Basic",
    ),
    ("authorization header", '-H "X-Api-Key: 9f8e7d6c5b4a"', "9f8e7d6c5b4a", "X-Api-Key"),
    ("authorization header", "AUTHORIZATION=Token Zm9vYmFyYmF6", "Zm9vYmFyYmF6", "AUTHORIZATION="),
    ("bearer token", "token Bearer abcDEF123456789xyz", "abcDEF123456789xyz", "Bearer"),
    ("URL password", "postgres://app:hunter2@db:5432/x", "hunter2", "postgres://app:"),
    ("Anthropic key", "use sk-ant-api03-AbCdEf012345678", "AbCdEf012345678", "use "),
    ("OpenRouter key", "sk-or-v1-" + "0a1b2c3d" * 8, "0a1b2c3d0a1b", ""),
    ("OpenAI key", "sk-proj-0123456789abcdefghijklmn", "0123456789abcdefghijklmn", ""),
    ("model provider key", "GROQ=gsk_" + "Q1w2E3r4" * 6, "Q1w2E3r4Q1w2", "GROQ="),
    ("model provider key", "xai-" + "Zx9" * 20, "Zx9Zx9Zx9", ""),
    ("model provider key", "pplx-" + "a1B2" * 12, "a1B2a1B2", ""),
    ("model provider key", "r8_" + "Rr8" * 13, "Rr8Rr8Rr8", ""),
    ("GitHub token", "ghp_0123456789abcdefghijABCDEFGHIJ", "0123456789abcdefghij", ""),
    ("GitHub token", "github_pat_11ABCDEFG0123456789_abcdefXYZ", "11ABCDEFG0123456789", ""),
    ("GitHub token", "gho_0123456789abcdefghijABCDEFGHIJ", "0123456789abcdefghij", ""),
    ("GitLab token", "glpat-xY12xY12xY12xY12xY12", "xY12xY12xY12", ""),
    ("Atlassian token", "ATBB" + "k3Y9" * 9, "k3Y9k3Y9k3Y9", ""),
    ("AWS access key", "id AKIAIOSFODNN7EXAMPLE ok", "AKIAIOSFODNN7EXAMPLE", " ok"),
    (
        "Azure storage key",
        "DefaultEndpointsProtocol=https;AccountKey=" + "A1b2" * 21 + "Xy==;EndpointSuffix",
        "A1b2A1b2A1b2",
        "DefaultEndpointsProtocol=https;",
    ),
    (
        "Azure storage key",
        "https://acct.blob.core.windows.net/c?sv=2022&sig=" + "Ab12%2B" * 6,
        "Ab12%2BAb12%2B",
        "sv=2022&",
    ),
    ("Google API key", "AIzaSyA0123456789abcdefghijklmnopqrstuv", "SyA0123456789", ""),
    ("Google API key", "client GOCSPX-" + "g00gl3s3cr3t" * 3, "g00gl3s3cr3t", "client "),
    ("Slack token", "xoxb-123456789012-abcdefghij", "123456789012", ""),
    ("Slack token", "https://hooks.slack.com/services/T000/B000/XXXX", "T000/B000", ""),
    (
        "chat webhook or bot token",
        "https://discord.com/api/webhooks/123456789/AbC-dEf_123",
        "AbC-dEf_123",
        "",
    ),
    ("chat webhook or bot token", "bot 123456789:AA" + "h" * 33, "hhhhhhhhhhhh", "bot "),
    ("Stripe key", "sk_live_0123456789abcdef", "0123456789abcdef", ""),
    ("Stripe key", "whsec_" + "Wh5e" * 8, "Wh5eWh5eWh5e", ""),
    ("SendGrid key", "SG." + "s" * 22 + "." + "g" * 43, "sssssssssss", ""),
    ("package registry token", "npm_" + "a1" * 18, "a1a1a1a1", ""),
    ("package registry token", "dckr_pat_" + "D0ck" * 7, "D0ckD0ckD0ck", ""),
    ("package registry token", "hf_" + "Hf9" * 11, "Hf9Hf9Hf9", ""),
    ("cloud platform token", "dop_v1_" + "0f" * 32, "0f0f0f0f0f", ""),
    ("cloud platform token", "VAULT_TOKEN hvs.CAESI" + "v4u1t" * 5, "v4u1tv4u1t", "VAULT_TOKEN"),
    ("cloud platform token", "lin_api_" + "L1n" * 14, "L1nL1nL1n", ""),
    (
        "private key file",
        "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIPu\nPrivate-MAC: 0a1b",
        "AAAAIPu",
        "",
    ),
    ("private key file", "AGE-SECRET-KEY-1" + "QW3RTY" * 9 + "QWER", "QW3RTYQW3RTY", ""),
    (
        "JWT",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sflKxwRJSMeKKF2QT4",
        "sflKxwRJSMeKKF2QT4",
        "",
    ),
    (
        "secret assignment",
        "DB_PASSWORD=correct-horse-battery",
        "correct-horse-battery",
        "DB_PASSWORD=",
    ),
    ("secret assignment", '{"client_secret": "s3cr3tvalue"}', "s3cr3tvalue", "client_secret"),
    (
        "secret assignment",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI",
        "AWS_SECRET_ACCESS_KEY=",
    ),
    ("secret assignment", "password: hunter22", "hunter22", "password: "),
]


@pytest.mark.parametrize(("name", "text", "secret", "kept"), SECRETS)
def test_each_shape_finds_and_redacts_what_it_names(
    name: str, text: str, secret: str, kept: str
) -> None:
    assert name in [f.kind for f in find_secrets(text)]
    out = redact(text)
    assert secret not in out
    assert f"[redacted {name}]" in out
    assert kept in out


def test_every_shape_is_tested_and_listed_in_the_manual() -> None:
    names = [shape.name for shape in SHAPES]
    assert len(set(names)) == len(names)
    assert {name for name, *_ in SECRETS} == set(names)
    assert all(len(shape.finds) > 20 for shape in SHAPES)
    section = DOCS.read_text().split("### What is redacted", 1)[1].split("\n### ", 1)[0]
    listed = re.findall(r"^\| ([^|]+?) \| ", section, re.MULTILINE)[1:]  # past the header
    assert listed == names


def test_ordinary_text_is_left_alone() -> None:
    text = (
        "Edit src/token_store.py; the tokenizer: fast; see https://example.org/a:b@c\n"
        "sort_key=created_at_desc, the password is in the team's vault, primary key: id\n"
        "max_tokens=100000; input_tokens: 1,234; pwd: /home/dev/app; cwd=/srv/app\n"
        "the monkey: bananas; hotkey=ctrl+shift+p; secret: true"
    )
    assert find_secrets(text) == []
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "token: 3l6qyvzp7ns2c",  # a TID
        "commit_token = 4b825dc642cb6eb9a060e54bf8d69288fbee4904",  # a git object id
        "token: 3f839c3",  # an abbreviated one
        "api_key: 123e4567-e89b-12d3-a456-426614174000",  # a UUID
        "secret=" + "ab" * 32,  # a SHA-256 object id
    ],
)
def test_a_git_hash_a_uuid_or_a_tid_is_never_taken_for_a_secret(text: str) -> None:
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "password: ${DB_PASSWORD}",
        "API_KEY=$OPENAI_API_KEY",
        "token: <your token>",
        "api_key = your_api_key_here",
        "API_KEY=xxxxxxxx",
        "password: changeme",
        "secret = {{ vault_secret }}",
        "secret_key = op://vault/item/field",
        "Authorization: Bearer <token>",
        "postgres://app:${PGPASSWORD}@db/x",
    ],
)
def test_a_placeholder_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == []


def test_a_finding_says_which_line_holds_it_and_where() -> None:
    text = "first\nsecond AKIAIOSFODNN7EXAMPLE\n\nfourth: password = s3cr3t-Value\n"
    found = find_secrets(text)
    assert [(f.kind, f.line) for f in found] == [("AWS access key", 2), ("secret assignment", 4)]
    assert [text[f.start : f.end] for f in found] == ["AKIAIOSFODNN7EXAMPLE", "s3cr3t-Value"]


def test_where_two_shapes_find_one_secret_the_more_specific_names_it() -> None:
    found = find_secrets("export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx")
    assert [f.kind for f in found] == ["OpenAI key"]
    assert redact("OPENROUTER=sk-or-v1-" + "ab" * 32) == "OPENROUTER=[redacted OpenRouter key]"


def test_redacting_twice_changes_nothing_more() -> None:
    text = "\n".join(text for _name, text, _secret, _kept in SECRETS)
    once = redact(text)
    assert redact(once) == once
    assert find_secrets(once) == []


def test_a_letter_longer_in_lower_case_leaves_the_offsets_of_what_follows() -> None:
    text = "İstanbul İ token=s3cr3t-V4lue İ"  # "İ".lower() is two characters
    (found,) = find_secrets(text)
    assert text[found.start : found.end] == "s3cr3t-V4lue"
    assert redact(text) == "İstanbul İ token=[redacted secret assignment] İ"
