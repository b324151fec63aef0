"""The labelled set for bench_search.py: memories, and questions whose answer is known.

``ANSWERS`` are 50 memories a coding team would keep. Each comes with two
questions: ``paraphrase`` asks for it in other words (it shares no word with
the memory's title or text; bench_search.py checks this), ``shared`` uses some
of its words. ``distractors`` adds 150 more memories of the same sort, so the
set holds 200, and every question has plausible wrong answers.
"""

from __future__ import annotations

# (title, content, paraphrased question, question sharing words)
ANSWERS: list[tuple[str, str, str, str]] = [
    (
        "Chunked migration",
        "Lock time must stay under 50 ms, so we chunk the migration by 1000 rows.",
        "why are backfill batches small",
        "migration chunk lock time",
    ),
    (
        "Session store",
        "Sessions live in Redis with a 30 minute expiry; Postgres was too slow for it.",
        "where do we keep login state",
        "redis sessions expiry",
    ),
    (
        "Release day",
        "Deploys to production happen on Tuesdays after the staging smoke test passes.",
        "which weekday do we ship",
        "production deploys tuesday",
    ),
    (
        "Logo colour",
        "The logo uses the teal from the design kit, never the old orange.",
        "brand mark hue",
        "logo teal design kit",
    ),
    (
        "Password hashing",
        "User passwords are hashed with argon2id, memory cost 64 MB.",
        "how do we keep credentials safe",
        "argon2id passwords hashed",
    ),
    (
        "API rate limit",
        "Public endpoints allow 100 requests per minute per token; excess gets 429.",
        "how many calls can a client make before throttling",
        "rate limit requests per minute",
    ),
    (
        "Timezone rule",
        "All timestamps are stored in UTC and converted only in the browser.",
        "what clock zone do we save dates with",
        "timestamps stored utc",
    ),
    (
        "Flaky payment test",
        "test_refund_partial fails one run in twenty because of a race on the ledger.",
        "which check is unreliable within money suites",
        "test_refund_partial ledger race",
    ),
    (
        "Search engine choice",
        "We use SQLite FTS5 with BM25 for search instead of Elasticsearch.",
        "what powers document lookup",
        "fts5 bm25 search sqlite",
    ),
    (
        "Image uploads",
        "Uploaded images are resized to 2048 pixels and converted to WebP on ingest.",
        "what happens with pictures people send us",
        "images resized webp",
    ),
    (
        "Feature flags",
        "Feature flags live in LaunchDarkly; stale flags are removed after two sprints.",
        "how do we toggle unfinished functionality",
        "feature flags launchdarkly stale",
    ),
    (
        "Error tracking",
        "Exceptions are reported to Sentry with the release tag and user id scrubbed.",
        "where do crashes get sent",
        "sentry exceptions release tag",
    ),
    (
        "Backup policy",
        "Database snapshots are taken nightly and kept for 35 days in another region.",
        "how long do we retain copies of our information",
        "nightly database snapshots region",
    ),
    (
        "Python version",
        "The service targets Python 3.11; 3.12 waits on a wheel for grpcio.",
        "which interpreter release do we run",
        "python 3.11 grpcio wheel",
    ),
    (
        "Email provider",
        "Transactional mail goes through Postmark; marketing mail uses Mailchimp.",
        "who sends our notifications to inboxes",
        "postmark transactional mail",
    ),
    (
        "Cache invalidation",
        "Product pages are cached for 10 minutes and purged when a price changes.",
        "how often do stale item listings refresh",
        "product pages cached purged price",
    ),
    (
        "Queue retries",
        "Failed jobs retry five times with exponential backoff, then go to the dead letter queue.",
        "what happens when background work keeps crashing",
        "failed jobs retry dead letter queue",
    ),
    (
        "Code review rule",
        "Every pull request needs one approval and green CI before merge.",
        "what must happen prior to changes landing on main",
        "pull request approval merge",
    ),
    (
        "Accessibility",
        "Buttons need visible focus outlines and a contrast ratio of at least 4.5.",
        "making controls usable for people with low vision",
        "buttons focus contrast ratio",
    ),
    (
        "Mobile minimum OS",
        "The app supports iOS 16 and Android 10 and newer.",
        "oldest phone software we still handle",
        "ios 16 android 10 supports",
    ),
    (
        "Log retention",
        "Application logs are kept for 14 days in Loki, audit logs for a year.",
        "how long do we hold diagnostic output",
        "logs kept loki audit",
    ),
    (
        "Currency math",
        "Money amounts are integers in cents; floats are forbidden in billing code.",
        "how should prices be represented numerically",
        "money integers cents billing",
    ),
    (
        "Dependency updates",
        "Renovate opens dependency updates on Mondays and automerges patch releases.",
        "how do library versions get bumped",
        "renovate dependency updates automerges",
    ),
    (
        "Secrets",
        "Secrets come from Vault at startup; none are committed or put in env files.",
        "how do services obtain api keys and tokens",
        "secrets vault startup",
    ),
    (
        "Pagination",
        "List endpoints use cursor pagination with a maximum page size of 200.",
        "how do we return long result sets in pieces",
        "cursor pagination page size",
    ),
    (
        "Onboarding doc",
        "New engineers start with docs/onboarding.md and pair for their first week.",
        "what should a fresh hire read on day one",
        "onboarding docs new engineers pair",
    ),
    (
        "Incident process",
        "Sev1 incidents page the on-call lead and get a postmortem within five days.",
        "what do we do if our site is down",
        "sev1 incidents postmortem on-call",
    ),
    (
        "Frontend framework",
        "The dashboard is written in React with TypeScript and Vite.",
        "which ui library builds admin screens",
        "dashboard react typescript vite",
    ),
    (
        "CSV export",
        "Exports stream CSV rows so that large reports never load fully in memory.",
        "downloading big spreadsheets without running out of RAM",
        "exports stream csv rows reports",
    ),
    (
        "Translation",
        "UI strings are translated in Crowdin; German and French ship with each release.",
        "how is the interface localised into other languages",
        "ui strings crowdin german french",
    ),
    (
        "Load test result",
        "The checkout handled 800 orders per second before p99 latency passed 300 ms.",
        "how much traffic can purchasing survive",
        "checkout orders per second latency",
    ),
    (
        "Webhook signing",
        "Outgoing webhooks carry an HMAC-SHA256 signature header over the raw body.",
        "how can receivers verify our callbacks are genuine",
        "webhooks hmac signature header",
    ),
    (
        "Soft delete",
        "Customer records are soft deleted with a deleted_at column and purged after 90 days.",
        "what happens if client accounts get removed",
        "customer records soft deleted purged",
    ),
    (
        "Container base image",
        "Images build from python:3.11-slim; alpine broke numpy wheels.",
        "which docker foundation do we start with",
        "images python slim alpine numpy",
    ),
    (
        "Monitoring",
        "Grafana dashboards alert when error rate exceeds 2 percent for five minutes.",
        "what wakes someone up at night with alarms",
        "grafana error rate alert",
    ),
    (
        "Git branching",
        "We use trunk-based development; release branches are cut only for hotfixes.",
        "how is version control organised",
        "trunk-based development release branches hotfixes",
    ),
    (
        "Data warehouse",
        "Analytics events land in BigQuery through a nightly Airflow job.",
        "where does reporting information end up",
        "analytics events bigquery airflow",
    ),
    (
        "Auth tokens",
        "Access tokens expire after 15 minutes; refresh tokens after 30 days.",
        "how long does a sign in stay valid",
        "access tokens expire refresh",
    ),
    (
        "File storage",
        "User files are kept in S3 with versioning on and served through CloudFront.",
        "where do uploaded documents physically reside",
        "user files s3 versioning cloudfront",
    ),
    (
        "Test coverage",
        "Core packages must keep line coverage above 85 percent or CI fails.",
        "minimum share of code exercised by checks",
        "line coverage 85 percent ci",
    ),
    (
        "Address validation",
        "Postal addresses are validated with the Loqate API before an order is placed.",
        "how do we make sure shipping destinations exist",
        "postal addresses validated loqate",
    ),
    (
        "Dark mode",
        "Dark mode follows the operating system setting unless the user overrides it.",
        "night theme behaviour",
        "dark mode operating system setting",
    ),
    (
        "SQL style",
        "Migrations are plain SQL files numbered in order; no ORM auto-generation.",
        "how do we write schema changes",
        "migrations plain sql files orm",
    ),
    (
        "Mobile push",
        "Push notifications go through Firebase Cloud Messaging for both platforms.",
        "how do phone alerts reach users",
        "push notifications firebase messaging",
    ),
    (
        "Ownership",
        "The payments team owns the billing service and its pager rotation.",
        "who is responsible for invoicing software",
        "payments team owns billing service",
    ),
    (
        "PDF generation",
        "Invoices are rendered to PDF with WeasyPrint from HTML templates.",
        "how do we produce printable bills",
        "invoices pdf weasyprint templates",
    ),
    (
        "Search typo tolerance",
        "Product search corrects misspellings with a trigram index in Postgres.",
        "finding items when shoppers spell words wrong",
        "product search trigram index",
    ),
    (
        "GDPR export",
        "A user can download all personal data as JSON within 30 days of asking.",
        "privacy request to get copies covering everything about someone",
        "personal data json download",
    ),
    (
        "Staging data",
        "Staging uses anonymised copies of production refreshed every Sunday.",
        "what information is in the pre-live environment",
        "staging anonymised production sunday",
    ),
    (
        "Code formatting",
        "Python is formatted with ruff format and linted with ruff check in pre-commit.",
        "which tool tidies source layout",
        "ruff format pre-commit python",
    ),
]

_SERVICES = [
    "orders",
    "inventory",
    "shipping",
    "catalog",
    "accounts",
    "reviews",
    "coupons",
    "ledger",
    "gateway",
    "scheduler",
    "notifier",
    "reports",
    "profiles",
    "carts",
    "audit",
]
_FACTS = [
    "The {s} service runs three replicas behind the internal load balancer.",
    "The {s} service owns its own schema; other services read it through the API only.",
    "Alerts for {s} go to the #{s}-alerts channel during office hours.",
    "The {s} client library is generated from the OpenAPI document on every build.",
    "Old {s} endpoints under /v1 are deprecated and answer with a Sunset header.",
    "The {s} worker processes its queue in batches of fifty messages.",
    "Integration tests for {s} run against a throwaway container database.",
    "The {s} team holds a weekly triage of bugs on Thursday afternoon.",
    "Configuration for {s} is read from YAML files checked into the repository.",
    "The {s} health check reports ready only after its caches are warm.",
]


def distractors() -> list[tuple[str, str]]:
    """150 memories: every fact above, for every service."""
    return [
        (f"{s.capitalize()}: {fact.split()[2]} {fact.split()[3]}", fact.format(s=s))
        for s in _SERVICES
        for fact in _FACTS
    ]
