"""Secrets taken out of transcript text before it goes into a handoff note.

A transcript holds whatever the session saw: a command's output with an API
key, a ``.env`` file it read, a URL with a password. An automatic handoff is
written to the vault (a folder people sync and open in Obsidian) and put into
another model's context, so every piece of transcript text goes through
:func:`redact` first. Each pattern below names what it finds; what matches is
replaced by ``[redacted <name>]``. The list is documented for users (what is
redacted) and every pattern has a test.

>>> redact("export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx")
'export OPENAI_API_KEY=[redacted OpenAI key]'
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["PATTERNS", "redact"]

_KEYWORDS = r"[A-Za-z0-9_.-]*(?:api[_-]?key|secret|token|passw(?:or)?d|passwd|credential)s?"


def _secret(
    name: str, finds: str, regex: str, flags: re.RegexFlag = re.NOFLAG
) -> tuple[str, str, re.Pattern[str]]:
    """One entry of :data:`PATTERNS`; a group named ``keep`` is text kept before the secret."""
    return name, finds, re.compile(regex, flags)


_PEM = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)"
_HEADER = (
    r"(?P<keep>\b(?:Authorization|Proxy-Authorization|X-Api-Key|Api-Key)[\"']?\s*[:=]\s*"
    r"[\"']?(?:(?:Bearer|Basic|Token|Digest)\s+)?)(?!\[redacted)[^\s\"',;]+"
)
_ASSIGNMENT = rf"(?P<keep>\b{_KEYWORDS}[\"']?\s*[:=]\s*[\"']?)(?!\[redacted)[^\s\"',;]{{6,}}"

PATTERNS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    _secret(
        "private key",
        "a PEM private key block (-----BEGIN … PRIVATE KEY----- to its END line, or to "
        "the end of the text when the END line is missing)",
        _PEM,
        re.DOTALL,
    ),
    _secret(
        "authorization header",
        "the value of an Authorization, Proxy-Authorization, X-Api-Key or Api-Key header "
        "(any scheme: Bearer, Basic, Token, …)",
        _HEADER,
        re.IGNORECASE,
    ),
    _secret(
        "bearer token",
        "a token after the word Bearer (curl -H, logs)",
        r"(?P<keep>\bBearer\s+)[A-Za-z0-9._~+/=-]{12,}",
    ),
    _secret(
        "URL password",
        "the password in a URL's user:password@ part (postgres://me:pw@host)",
        r"(?P<keep>://[^\s/@:]+:)[^\s/@]+(?=@)",
    ),
    _secret("Anthropic key", "Anthropic API keys (sk-ant-…)", r"\bsk-ant-[A-Za-z0-9_-]{10,}"),
    _secret(
        "OpenAI key",
        "OpenAI API keys (sk-…, sk-proj-…, sk-svcacct-…, sk-admin-…)",
        r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}",
    ),
    _secret(
        "GitHub token",
        "GitHub tokens: personal (ghp_), OAuth (gho_), user-to-server (ghu_), "
        "server-to-server (ghs_), refresh (ghr_), fine-grained (github_pat_)",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    _secret(
        "AWS access key",
        "AWS access key ids (AKIA…, ASIA… and the other four-letter prefixes)",
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
    ),
    _secret(
        "Slack token",
        "Slack tokens (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-) and incoming-webhook URLs",
        r"\bxox[abeprs]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/]+",
    ),
    _secret("Google API key", "Google API keys (AIza…)", r"\bAIza[0-9A-Za-z_-]{35}"),
    _secret(
        "Stripe key",
        "Stripe secret and restricted keys (sk_live_, sk_test_, rk_live_, rk_test_)",
        r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{10,}",
    ),
    _secret(
        "package registry token",
        "npm (npm_…), PyPI (pypi-…) and Hugging Face (hf_…) tokens",
        r"\b(?:npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,}|hf_[A-Za-z0-9]{30,})",
    ),
    _secret(
        "JWT",
        "JSON Web Tokens (three base64url parts, the first two starting eyJ)",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    _secret(
        "secret assignment",
        "the value assigned to a name holding API_KEY, SECRET, TOKEN, PASSWORD, PASSWD or "
        'CREDENTIAL (FOO_API_KEY=…, password: …, "token": "…")',
        _ASSIGNMENT,
        re.IGNORECASE,
    ),
)
"""(name, what it finds, pattern), applied in this order: specific before generic."""


def redact(text: str) -> str:
    """``text`` with every secret the patterns find replaced by ``[redacted <name>]``."""
    for name, _what, pattern in PATTERNS:
        text = pattern.sub(_replacer(name), text)
    return text


def _replacer(name: str) -> Callable[[re.Match[str]], str]:
    """Keep what names the secret (a header, ``KEY=``, a URL's user), replace the secret."""

    def replace(match: re.Match[str]) -> str:
        keep = match.groupdict().get("keep") or ""
        return f"{keep}[redacted {name}]"

    return replace
