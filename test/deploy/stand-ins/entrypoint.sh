#!/bin/sh
# The stand-in for the official postgres image's entrypoint (test/deploy/stand-in-images.ts):
# what deploy/compose.yaml relies on, nothing more. `postgres ...`: as root, make PGDATA the
# postgres user's and run again as that user; on an empty PGDATA, initdb with POSTGRES_USER as
# the superuser (password POSTGRES_PASSWORD, scram-sha-256 from any address) and create
# POSTGRES_DB; then serve on every address. Anything else (nginx for the replicas' proxy): run it.
set -eu
PGBIN=/usr/lib/postgresql/15/bin
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"

if [ "${1:-}" != postgres ]; then exec "$@"; fi

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /run/postgresql
  chown postgres:postgres "$PGDATA" /run/postgresql
  chmod 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

user="${POSTGRES_USER:-postgres}"
database="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  "$PGBIN/initdb" --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  if [ "$database" != postgres ]; then
    "$PGBIN/pg_ctl" -w -o "-c listen_addresses=''" start >/dev/null
    "$PGBIN/psql" -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres -q -c "CREATE DATABASE \"$database\""
    "$PGBIN/pg_ctl" -w -m fast stop >/dev/null
  fi
  echo "initialized $PGDATA: superuser $user, database $database"
fi
shift
exec "$PGBIN/postgres" -c listen_addresses='*' "$@"
