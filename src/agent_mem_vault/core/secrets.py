"""Secrets in text: the one list of the shapes they take, and how to find and redact them.

A transcript holds whatever a session saw (a command's output with an API key,
a ``.env`` it read, a URL with a password), and an agent that writes a note
may paste the same. Everything that must not pass a secret on asks here, so
that a shape added once is known everywhere: the automatic handoff redacts its
transcript text with :func:`redact`.

Each :class:`Shape` names what it finds; docs/agents.md lists them all, and
every shape has a test that finds it and one that it leaves alone. Speed
matters, since every note and every piece of a transcript is scanned: a shape
runs only where one of its literal ``anchors`` occurs (a substring test, far
cheaper than a regex scan), and the shapes that ignore case run on the text in
lower case rather than with ``re.IGNORECASE``, which CPython's ``re`` makes
several times slower.

Shapes with a vendor's prefix (``sk-ant-``, ``ghp_``, ``AKIA``) are taken as
found. The generic ones (a value after ``Authorization:``, ``Bearer``, a URL's
``user:``, a name such as ``API_KEY=``) pass their value through guards first:
a placeholder (``${TOKEN}``, ``<your key>``, ``xxxxxx``) is never a secret,
nor is a value assigned to a secret's name that is wholly a git object id, a
UUID, a TID, a number or a path.

>>> redact("export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx")
'export OPENAI_API_KEY=[redacted OpenAI key]'
>>> [(f.kind, f.line) for f in find_secrets("ok\\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG")]
[('secret assignment', 2)]
>>> find_secrets("token: 3l6qyvzp7ns2c; commit = 4b825dc642cb6eb9a060e54bf8d69288fbee4904")
[]
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["SHAPES", "Finding", "Shape", "find_secrets", "redact"]


@dataclass(frozen=True, slots=True)
class Shape:
    """One shape a secret takes."""

    name: str
    """What a finding is called: ``[redacted <name>]``."""
    finds: str
    """What it finds, for people (docs/agents.md)."""
    anchors: tuple[str, ...]
    """Literal text one of which a match must contain (in lower case where ``folded``)."""
    pattern: re.Pattern[str]
    """The match; for a generic shape, group ``value`` is the secret (the text before it
    names it and stays)."""
    generic: bool = False
    """Its value counts only when it is not a placeholder (``_PLACEHOLDER``)."""
    judged: bool = False
    """Nor plainly something else (``_PLAIN``): a value merely assigned to a secret's name."""
    folded: bool = False
    """Matched on the text in lower case (the pattern is written in lower case)."""


def _shape(
    name: str,
    finds: str,
    anchors: tuple[str, ...],
    regex: str,
    *,
    generic: bool = False,
    judged: bool = False,
    folded: bool = False,
    dotall: bool = False,
) -> Shape:
    pattern = re.compile(regex, re.DOTALL if dotall else 0)
    return Shape(name, finds, anchors, pattern, generic, judged, folded)


_VALUE = r"(?P<value>(?!\[redacted)[^\s\"',;]"
_NAMES = (
    r"(?:api[_-]?key|(?:secret|access|private|auth|signing|encryption)[_-]?key"
    r"|secret|token|passw(?:or)?d|passwd|pwd|credential)s?"
)

SHAPES: tuple[Shape, ...] = (
    _shape(
        "private key",
        "a PEM or PGP private key block (-----BEGIN … PRIVATE KEY----- to its END line, "
        "or to the end of the text when the END line is missing)",
        ("-----BEGIN",),
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        dotall=True,
    ),
    _shape(
        "authorization header",
        "the value of an Authorization, Proxy-Authorization, X-Api-Key or Api-Key header "
        "(any scheme: Bearer, Basic, Token, …)",
        ("authorization", "api-key"),
        r"(?P<keep>\b(?:authorization|proxy-authorization|x-api-key|api-key)[\"']?\s*[:=]\s*"
        r"[\"']?(?:(?:bearer|basic|token|digest)\s+)?)"
        r"(?P<value>(?!\[redacted|(?:bearer|basic|token|digest)\s)[^\s\"',;]+)",
        generic=True,
        folded=True,
    ),
    _shape(
        "bearer token",
        "a token after the word Bearer (curl -H, logs)",
        ("Bearer",),
        r"(?P<keep>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{12,})",
        generic=True,
    ),
    _shape(
        "URL password",
        "the password in a URL's user:password@ part (postgres://me:pw@host)",
        ("://",),
        r"(?P<keep>://[^\s/@:]+:)(?P<value>[^\s/@]+)(?=@)",
        generic=True,
    ),
    _shape("Anthropic key", "Anthropic API keys (sk-ant-…)", ("sk-ant-",), r"\bsk-ant-[\w-]{10,}"),
    _shape(
        "OpenRouter key",
        "OpenRouter API keys (sk-or-v1-…)",
        ("sk-or-",),
        r"\bsk-or-v\d-[0-9a-f]{32,}",
    ),
    _shape(
        "OpenAI key",
        "OpenAI API keys (sk-…, sk-proj-…, sk-svcacct-…, sk-admin-…)",
        ("sk-",),
        r"\bsk-(?:proj-|svcacct-|admin-|None-)?[\w-]{20,}",
    ),
    _shape(
        "model provider key",
        "Groq (gsk_…), xAI (xai-…), Perplexity (pplx-…) and Replicate (r8_…) API keys",
        ("gsk_", "xai-", "pplx-", "r8_"),
        r"\b(?:gsk_[A-Za-z0-9]{40,}|xai-[A-Za-z0-9]{40,}|pplx-[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,})",
    ),
    _shape(
        "GitHub token",
        "GitHub tokens: personal (ghp_), OAuth (gho_), user-to-server (ghu_), "
        "server-to-server (ghs_), refresh (ghr_), fine-grained (github_pat_)",
        ("gh", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})",
    ),
    _shape(
        "GitLab token",
        "GitLab tokens: personal, deploy, runner, trigger, OAuth and agent (glpat-, gldt-, "
        "glrt-, glptt-, glcbt-, glimt-, glsoat-, gloas-, glft-, glagent-)",
        ("gl",),
        r"\bgl(?:pat|dt|rt|ptt|cbt|imt|soat|oas|ft|agent)-[\w-]{20,}",
    ),
    _shape(
        "Atlassian token",
        "Bitbucket app passwords and repository tokens (ATBB…) and Atlassian API tokens (ATATT3…)",
        ("ATBB", "ATATT3"),
        r"\b(?:ATBB[\w=.-]{32,}|ATATT3[\w=-]{100,})",
    ),
    _shape(
        "AWS access key",
        "AWS access key ids (AKIA…, ASIA… and the other four-letter prefixes)",
        ("A",),
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
    ),
    _shape(
        "Azure storage key",
        "Azure storage account keys (AccountKey=…) and the signature of a shared access "
        "signature URL (sig=…)",
        ("AccountKey=", "sig="),
        r"AccountKey=[A-Za-z0-9+/]{86}==|(?<=[?&])sig=[A-Za-z0-9%+/=]{30,}",
    ),
    _shape(
        "Google API key",
        "Google API keys (AIza…) and OAuth secrets and tokens (GOCSPX-…, ya29.…)",
        ("AIza", "GOCSPX-", "ya29."),
        r"\b(?:AIza[\w-]{35}|GOCSPX-[\w-]{28}|ya29\.[\w-]{20,})",
    ),
    _shape(
        "Slack token",
        "Slack tokens (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-) and incoming-webhook URLs",
        ("xox", "hooks.slack.com"),
        r"\bxox[abeprs]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/]+",
    ),
    _shape(
        "chat webhook or bot token",
        "Discord webhook URLs and Telegram bot tokens (123456789:AA…)",
        ("/api/webhooks/", ":AA"),
        r"https://(?:discord|discordapp)\.com/api/webhooks/\d+/[\w-]+|\b\d{8,10}:AA[\w-]{33}\b",
    ),
    _shape(
        "Stripe key",
        "Stripe secret and restricted keys (sk_live_, sk_test_, rk_live_, rk_test_) and "
        "webhook signing secrets (whsec_)",
        ("k_live_", "k_test_", "whsec_"),
        r"\b(?:[rs]k_(?:live|test)_[0-9A-Za-z]{10,}|whsec_[0-9A-Za-z]{24,})",
    ),
    _shape("SendGrid key", "SendGrid API keys (SG.….…)", ("SG.",), r"\bSG\.[\w-]{22}\.[\w-]{43}\b"),
    _shape(
        "package registry token",
        "npm (npm_…), PyPI (pypi-…), Docker Hub (dckr_pat_…) and Hugging Face (hf_…) tokens",
        ("npm_", "pypi-", "dckr_pat_", "hf_"),
        r"\b(?:npm_[A-Za-z0-9]{36}|pypi-[\w-]{50,}|dckr_pat_[\w-]{27,}|hf_[A-Za-z0-9]{30,})",
    ),
    _shape(
        "cloud platform token",
        "DigitalOcean (dop_v1_, doo_v1_, dor_v1_), HashiCorp Vault (hvs., hvb., hvr.), "
        "Databricks (dapi…), Shopify (shpat_, shpca_, shppa_, shpss_) and Linear (lin_api_) "
        "tokens",
        ("_v1_", "hvs.", "hvb.", "hvr.", "dapi", "shp", "lin_api_"),
        r"\b(?:do[por]_v1_[a-f0-9]{64}|hv[sbr]\.[\w-]{24,}|dapi[0-9a-f]{32}"
        r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|lin_api_[A-Za-z0-9]{40,})\b",
    ),
    _shape(
        "private key file",
        "PuTTY private key files and age secret keys (AGE-SECRET-KEY-1…)",
        ("PuTTY-User-Key-File-", "AGE-SECRET-KEY-1"),
        r"PuTTY-User-Key-File-\d: .*?Private-MAC: [0-9a-f]+|AGE-SECRET-KEY-1[0-9A-Z]{58}",
        dotall=True,
    ),
    _shape(
        "JWT",
        "JSON Web Tokens (three base64url parts, the first two starting eyJ)",
        ("eyJ",),
        r"\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}",
    ),
    _shape(
        "secret assignment",
        "the value assigned to a name ending in API_KEY, SECRET, SECRET_KEY, ACCESS_KEY, "
        "PRIVATE_KEY, TOKEN, PASSWORD, PASSWD, PWD or CREDENTIAL (AWS_SECRET_ACCESS_KEY=…, "
        'password: …, "token": "…"), unless it is a placeholder, a git object id, a UUID, '
        "a TID, a number or a path",
        ("key", "secret", "token", "passw", "pwd", "credential"),
        rf"(?P<keep>{_NAMES}[\"']?\s*[:=]\s*[\"']?){_VALUE}{{6,}})",
        generic=True,
        judged=True,
        folded=True,
    ),
)
"""Every shape, specific before generic: where two find the same text, the earlier names it."""

_PLACEHOLDER = re.compile(
    r"\$\{?[A-Za-z_]\w*\}?|%\(\w+\)s|%s|<[^>]*>|\{\{[^}]*\}\}|\{\w+\}|[xX*._-]{3,}|…+"
    r"|(?:(?:your|my|some|the|an?)[_-])?(?:example|sample|dummy|fake|placeholder|changeme"
    r"|redacted|none|null|undefined|secret|password|passwd|token|api[_-]?key|key|value)"
    r"(?:[_-](?:here|goes[_-]here|value))?"
    r"|(?:your|my)[_-][a-z_-]*(?:key|token|secret|password|here)",
    re.IGNORECASE,
)
"""What stands for a secret in examples and templates: ``$VAR``, ``${VAR}``, ``%(x)s``,
``<your key>``, ``{{ secret }}``, ``xxxxxx``, ``your_api_key_here``, ``changeme``."""

_PLAIN = re.compile(
    r"[0-9a-f]{7,12}|[0-9a-f]{40}|[0-9a-f]{64}"  # a git object id, abbreviated or whole
    r"|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"  # a UUID
    r"|[234567a-j][234567a-z]{12}"  # a TID
    r"|[0-9][0-9_.,]*"  # a number (max_tokens=100000)
    r"|(?:~|\.{1,2})?/\S*|[A-Za-z]:\\\S*"  # a path
    r"|(?:op|vault|env|ssm|secretsmanager|gcpsm|azkv):\S*"  # a reference to a secret store
)
"""A value assigned to a secret's name that is plainly not the secret itself."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret found: what kind, where (``text[start:end]`` is the secret) and on which line."""

    kind: str
    start: int
    end: int
    line: int
    """1-based, for a person told which line of a note holds it."""


def find_secrets(text: str) -> list[Finding]:
    """Every secret in ``text``, in the order they stand; none overlap."""
    # The spans taken, in order of their starts. They never overlap, so their ends are
    # in the same order, and only the two neighbours of a new span can overlap it.
    starts: list[int] = []
    spans: list[tuple[int, int, str]] = []
    lower: str | None = None
    for shape in SHAPES:
        haystack = text
        if shape.folded:
            if lower is None:
                lower = _lower(text)
            haystack = lower
        if not any(anchor in haystack for anchor in shape.anchors):
            continue
        for match in shape.pattern.finditer(haystack):
            if shape.generic:
                start, end = match.span("value")
                value = text[start:end]
                if _PLACEHOLDER.fullmatch(value) or (shape.judged and _PLAIN.fullmatch(value)):
                    continue
            else:
                start, end = match.span()
            at = bisect.bisect_left(starts, start)
            if (at and spans[at - 1][1] > start) or (at < len(spans) and spans[at][0] < end):
                continue  # an earlier shape found this text
            starts.insert(at, start)
            spans.insert(at, (start, end, shape.name))
    found = []
    line, counted_to = 1, 0
    for start, end, kind in spans:
        line += text.count("\n", counted_to, start)
        counted_to = start
        found.append(Finding(kind, start, end, line))
    return found


def redact(text: str) -> str:
    """``text`` with each secret replaced by ``[redacted <kind>]`` (what names it, such as a
    header, ``KEY=`` or a URL's user, stays)."""
    found = find_secrets(text)
    if not found:
        return text
    parts, at = [], 0
    for finding in found:
        parts += [text[at : finding.start], f"[redacted {finding.kind}]"]
        at = finding.end
    parts.append(text[at:])
    return "".join(parts)


def _lower(text: str) -> str:
    """``text`` in lower case, at the same offsets: a letter whose lower case is longer
    (``İ``) keeps its case, so a span found here is the same span of ``text``."""
    lower = text.lower()
    if len(lower) == len(text):
        return lower
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
