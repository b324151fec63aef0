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
