#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback, for tests and CI.
#
#   scripts/with-postgres.sh COMMAND [ARG...]   start one, run COMMAND with PETSTORE_TEST_POSTGRES_URL
#                                               (and _DIR) set, stop and delete it; exits with its status
#   scripts/with-postgres.sh start              start one and leave it running; prints export lines
#                                               (eval "$(scripts/with-postgres.sh start)")
#   scripts/with-postgres.sh stop DIR           stop and delete the one started in DIR
#
# The cluster lives in a temp dir (trust auth, superuser "petstore", database "petstore"), listens
# on 127.0.0.1 only, and keeps PostgreSQL's durable defaults (fsync, synchronous_commit on).
# Debian's server binaries are used (/usr/lib/postgresql/*/bin); when missing and run as root with
# apt-get, the `postgresql` package is installed first (not with PETSTORE_TEST_NO_INSTALL=1). As
# root the server runs as user postgres (initdb refuses root).
set -euo pipefail

NAME=with-postgres
# shellcheck source=lib/throwaway-server.sh
source "$(dirname "$0")/lib/throwaway-server.sh"

find_bin() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x "$dir/pg_ctl" ]] && { echo "$dir"; return 0; }
  done
  command -v pg_ctl >/dev/null && { dirname "$(command -v pg_ctl)"; return 0; }
  return 1
}

# Runs a server binary as the cluster's owner.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local bin dir port tries
  bin=$(find_bin) || { install_package postgresql 'PostgreSQL server'; bin=$(find_bin); }
  dir=$(mktemp -d "${TMPDIR:-/tmp}/petstore-pg.XXXXXX")
  chmod 755 "$dir"
  [[ $(id -u) -eq 0 ]] && chown postgres: "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U petstore --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
    log "initdb failed:"; cat "$dir/initdb.log" >&2; rm -rf "$dir"; exit 1; }
  for tries in 1 2 3 4 5; do
    port=${PETSTORE_PG_PORT:-$((20000 + RANDOM % 20000))}
    port_free "$port" || continue
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir" >/dev/null; then
      as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U petstore petstore
      echo "$dir" >"$dir/.petstore-pg"
      echo "$bin" >>"$dir/.petstore-pg"
      URL="postgres://petstore@127.0.0.1:$port/petstore"
      DIR=$dir
      log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') at $URL (cluster in $dir)"
      return 0
    fi
    [[ -n "${PETSTORE_PG_PORT:-}" ]] && break
  done
  log "the server did not start:"; cat "$dir/server.log" >&2 || true
  rm -rf "$dir"
  exit 1
}

stop() {
  local dir=$1 bin
  [[ -f "$dir/.petstore-pg" ]] || { log "$dir is not a cluster started by this script"; exit 1; }
  bin=$(sed -n 2p "$dir/.petstore-pg")
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

dispatch PETSTORE_TEST_POSTGRES "$@"
