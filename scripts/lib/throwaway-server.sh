# What scripts/with-postgres.sh and scripts/with-redis.sh share; sourced by both. The script
# sets NAME (for messages) and defines start (which sets URL and DIR) and stop DIR first.

log() { echo "$NAME: $*" >&2; }

# Installs Debian's package $1 (a server named $2 in messages) with apt-get when run as root,
# unless PETSTORE_TEST_NO_INSTALL is set (a host whose packages the tests must not change).
install_package() {
  local package=$1 server=$2
  if [[ $(id -u) -ne 0 || -n ${PETSTORE_TEST_NO_INSTALL:-} ]] || ! command -v apt-get >/dev/null; then
    log "no $server found; install Debian's $package package (apt-get install -y $package)"
    exit 1
  fi
  log "installing $package with apt-get"
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$package"; } >&2
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The command line: COMMAND [ARG...], start, or stop DIR. $1 is the environment prefix
# (PETSTORE_TEST_POSTGRES): COMMAND runs with ${prefix}_URL and ${prefix}_DIR set.
dispatch() {
  local prefix=$1 status
  shift
  case "${1:-}" in
    '' | -h | --help)
      sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    start)
      start
      printf 'export %s_URL=%q\nexport %s_DIR=%q\n' "$prefix" "$URL" "$prefix" "$DIR"
      ;;
    stop)
      stop "${2:?usage: $(basename "$0") stop DIR}"
      ;;
    *)
      start
      trap 'stop "$DIR"' EXIT
      trap 'exit 130' INT TERM
      status=0
      env "${prefix}_URL=$URL" "${prefix}_DIR=$DIR" "$@" || status=$?
      exit "$status"
      ;;
  esac
}
