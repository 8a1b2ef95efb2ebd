#!/usr/bin/env bash
# A throwaway Redis server on loopback, for tests and CI.
#
#   scripts/with-redis.sh COMMAND [ARG...]   start one, run COMMAND with PETSTORE_TEST_REDIS_URL and
#                                            PETSTORE_TEST_REDIS_DIR set, stop and delete it; exits
#                                            with COMMAND's status
#   scripts/with-redis.sh start              start one and leave it running; prints export lines
#                                            (eval "$(scripts/with-redis.sh start)")
#   scripts/with-redis.sh stop DIR           stop and delete the one started in DIR
#
# The server lives in a temp dir with its config (DIR/redis.conf: a test may stop the server and
# start it again with `redis-server DIR/redis.conf`), listens on 127.0.0.1 only, and keeps nothing
# on disk (no RDB, no AOF). Debian's redis-server is used; when missing and run as root with
# apt-get, the `redis-server` package is installed first (not with PETSTORE_TEST_NO_INSTALL=1).
set -euo pipefail

NAME=with-redis
# shellcheck source=lib/throwaway-server.sh
source "$(dirname "$0")/lib/throwaway-server.sh"

# Waits until the server answers PING (redis-cli is in the same Debian package as the server).
wait_ready() {
  local port=$1 i
  for i in $(seq 1 100); do
    [[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]] && return 0
    sleep 0.05
  done
  return 1
}

start() {
  local port tries
  command -v redis-server >/dev/null || install_package redis-server 'redis-server'
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/petstore-redis.XXXXXX")
  for tries in 1 2 3 4 5; do
    port=${PETSTORE_REDIS_PORT:-$((20000 + RANDOM % 20000))}
    port_free "$port" || continue
    cat >"$DIR/redis.conf" <<EOF
bind 127.0.0.1
port $port
dir $DIR
pidfile $DIR/redis.pid
logfile $DIR/redis.log
daemonize yes
save ""
appendonly no
maxmemory 256mb
maxmemory-policy noeviction
EOF
    if redis-server "$DIR/redis.conf" && wait_ready "$port"; then
      URL="redis://127.0.0.1:$port"
      log "Redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-) at $URL (in $DIR)"
      return 0
    fi
    [[ -n "${PETSTORE_REDIS_PORT:-}" ]] && break
  done
  log "the server did not start:"; cat "$DIR/redis.log" >&2 || true
  rm -rf "$DIR"
  exit 1
}

stop() {
  local dir=$1 port
  [[ -f "$dir/redis.conf" ]] || { log "$dir is not a server started by this script"; exit 1; }
  port=$(awk '$1 == "port" { print $2 }' "$dir/redis.conf")
  redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
  [[ -f "$dir/redis.pid" ]] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
  rm -rf "$dir"
}

dispatch PETSTORE_TEST_REDIS "$@"
