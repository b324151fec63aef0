# Sourced by scripts/test: starts or installs what the tests talk to, and
# exports where to find it. Each part skips itself when it cannot run here;
# the tests that need it then skip with the reason.

# -- PostgreSQL: make sure it runs, and give this test run a fresh database.
if command -v pg_isready >/dev/null 2>&1; then
  if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
    if [ -d /etc/postgresql ]; then
      pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
      for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
    fi
  fi
fi

# A fresh database for this test run (AMV_TEST_POSTGRES_DSN); the store and
# harness suites then run on PostgreSQL too. Databases left by runs more than
# a day old are dropped first. Without PostgreSQL the variable stays unset and
# those suites run on memory and SQLite only.
if [ -z "${AMV_TEST_POSTGRES_DSN:-}" ]; then
  if command -v psql >/dev/null 2>&1 && pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    amv_pg() { psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -qAtX -v ON_ERROR_STOP=1 "$@"; }
    for amv_old in $(amv_pg -c "SELECT datname FROM pg_database
        WHERE datname ~ '^amv_test_[0-9]{14}_[0-9]+$'
        AND to_timestamp(substr(datname, 10, 14), 'YYYYMMDDHH24MISS') < now() - interval '1 day'" 2>/dev/null); do
      amv_pg -c "DROP DATABASE IF EXISTS \"$amv_old\"" >/dev/null 2>&1 || true
    done
    amv_db="amv_test_$(date -u +%Y%m%d%H%M%S)_$$${RANDOM}"
    # An ICU en-US default collation where the server has ICU, as many
    # production databases have: code that forgets COLLATE "C" then sorts
    # differently from memory and SQLite, and the tests show it.
    if amv_pg -c "CREATE DATABASE \"$amv_db\" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'" >/dev/null 2>&1 \
        || amv_pg -c "CREATE DATABASE \"$amv_db\"" >/dev/null; then
      export AMV_TEST_POSTGRES_DSN="postgresql://postgres@127.0.0.1:5432/$amv_db"
      AMV_TEST_DB_CREATED="$amv_db"  # scripts/test drops it when the run ends
      echo "test-env: PostgreSQL tests use the fresh database $amv_db"
    else
      echo "test-env: could not create the database $amv_db as user postgres; store tests run on memory and SQLite only (PostgreSQL-only tests skip)"
    fi
    unset -f amv_pg
    unset amv_db amv_old
  elif [ -z "${AMV_TEST_POSTGRES_DSN:-}" ]; then
    echo "test-env: PostgreSQL is not reachable on 127.0.0.1:5432; store tests run on memory and SQLite only (PostgreSQL-only tests skip)"
  fi
else
  echo "test-env: PostgreSQL tests use AMV_TEST_POSTGRES_DSN as given"
fi

# -- npm packages the tests run, each folder's tree as its package-lock.json
# pins it (integrity-checked; the lock names no download addresses), once, and
# again when the lock changes. `npm install` rather than `npm ci`: opencode-ai
# names optional platform packages that npm leaves out of a lock and `npm ci`
# then refuses; with the lock in sync, `npm install` installs exactly the lock.
# They need Node 20+ with npm; without it the tests that use them skip with the
# reason. A machine that has npm and fails to install stops the run: a test
# that skips for it would hide what it tests.
#   tests/pds/            the reference AT Protocol PDS (@atproto/dev-env), for publishing
#   tests/coding_agents/  Claude Code, Codex, Gemini CLI and opencode, end to end
#   tests/mcp/clients/    the MCP TypeScript SDK client and the conformance suite (Node 22)
amv_npm_install() {
  local dir=$1 what=$2 mark="$1/node_modules/.amv-installed"
  if [ -f "$mark" ] && [ ! "$dir/package-lock.json" -nt "$mark" ]; then
    return 0
  fi
  echo "test-env: installing $what in $dir from its package-lock.json; once"
  if ! (cd "$dir" && npm install --omit-lockfile-registry-resolved --no-audit --no-fund \
      --loglevel=error >/dev/null); then
    echo "test-env: npm could not install $what in $dir (above); fix that, or run without npm on PATH to skip those tests" >&2
    exit 1
  fi
  touch "$mark"
}
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
    && node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  amv_npm_install tests/pds "the reference PDS (@atproto/dev-env)"
  amv_npm_install tests/coding_agents "Claude Code, Codex, Gemini CLI and opencode"
  amv_npm_install tests/mcp/clients "the MCP TypeScript SDK and conformance suite"
else
  echo "test-env: Node 20+ with npm not found; the PDS, real-agent and MCP client tests skip"
fi
unset -f amv_npm_install

# -- Chromium for the operator console tests (tests/console/): Debian's
# `chromium` package, driven by Playwright with executable_path; never a
# browser download. Installed with apt when missing (apt-get update once);
# without apt (or root) the console tests skip with the reason.
if [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "test-env: installing chromium and chromium-driver with apt, once"
    if DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1; then
      echo "test-env: chromium installed"
    else
      echo "test-env: apt could not install chromium; the console tests skip"
    fi
  else
    echo "test-env: /usr/bin/chromium is missing and apt is not usable here; the console tests skip"
  fi
fi
