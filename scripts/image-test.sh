#!/usr/bin/env bash
# shellcheck disable=SC2016 # the single-quoted $ below are buildah's Go templates
# Builds the real Dockerfile with buildah and runs the image, with no container engine and no
# image registry: both base images are assembled here from the host's own files and passed as
# the Dockerfile's build args.
#   runtime base: the glibc libraries the binary links (ldd), a passwd naming the non-root user
#                 65532 as distroless does, /tmp
#   builder base: sh and the few tools the Dockerfile's pick stage runs (ls, grep, sha256sum...)
# Then checks the image's configuration (user, port, volume, health check, entrypoint) and runs
# the binary inside it as the image's user: `keys add`, serving with that keys file read-only, the
# HEALTHCHECK command, a pet written to the data volume, SIGTERM -> exit 0.
# Also builds the pick stage with TARGETARCH=arm64 and checks it took the arm64 binary.
# Needs root, buildah (apt-get install -y buildah) and dist/release (make release: the image holds
# the released linux binary). Storage is private to the run and removed.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v buildah >/dev/null || { echo "image-test: needs buildah: apt-get install -y buildah" >&2; exit 1; }
# shellcheck source=scripts/lib/build-info.sh
source scripts/lib/build-info.sh
version=$(node -p 'require("./package.json").version')
target=$(host_target)
RELEASE_BIN=dist/release/petstore-$version-$target
[[ -x "$RELEASE_BIN" ]] || { echo "image-test: needs $RELEASE_BIN (make release)" >&2; exit 1; }

work=$(mktemp -d /tmp/petstore-image-test.XXXXXX)
B=(buildah --storage-driver vfs --root "$work/storage" --runroot "$work/run")
server_pid=""
# Processes below $1: buildah run does not pass signals on, so the server is signalled itself.
descendants() {
  local p
  for p in $(pgrep -P "$1" || true); do
    echo "$p"
    descendants "$p"
  done
}
app_pids() {
  local p
  for p in $(descendants "$1"); do [[ "$(cat "/proc/$p/comm" 2>/dev/null)" == petstore ]] && echo "$p"; done
  return 0
}
cleanup() {
  if [[ -n "$server_pid" ]]; then
    # The server first, so that buildah run ends by itself and cleans up after itself.
    # shellcheck disable=SC2046 # one pid a word
    kill $(app_pids "$server_pid") 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    # shellcheck disable=SC2046
    kill -KILL $(descendants "$server_pid") "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  "${B[@]}" rm --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "image-test: FAIL: $*" >&2; [[ -f "$work/server.log" ]] && sed 's/^/  server: /' "$work/server.log" >&2; exit 1; }
step() { printf 'image-test: %s (%ss)\n' "$1" "$SECONDS"; }

# Copies each file, and every shared library ldd names for it, to the same path under $1.
copy_with_libs() {
  local root=$1 file lib
  shift
  for file in "$@"; do
    cp --parents -L "$file" "$root"
    for lib in $(ldd "$file" 2>/dev/null | grep -oE '/[^ ]+' || true); do cp --parents -nL "$lib" "$root"; done
  done
}

base_image() { # NAME ROOTFS [Containerfile lines...]
  local name=$1 rootfs=$2
  shift 2
  printf '%s\n' 'FROM scratch' 'COPY rootfs/ /' "$@" >"$rootfs/../Containerfile"
  "${B[@]}" bud --isolation chroot --quiet -t "$name" -f "$rootfs/../Containerfile" "$rootfs/.." >/dev/null
}

step "assembling base images from the host"
rt="$work/runtime/rootfs"
mkdir -p "$rt/etc" "$rt/tmp" "$rt/home/nonroot"
chmod 1777 "$rt/tmp"
chown 65532:65532 "$rt/home/nonroot"
# The libraries the released binary links (those of bun itself: it is bun plus the app).
copy_with_libs "$rt" "$RELEASE_BIN"
rm -rf "$rt/dist"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rt/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rt/etc/group"
base_image localhost/petstore-test-runtime-base "$rt"

bd="$work/builder/rootfs"
mkdir -p "$bd/tmp" "$bd/root" "$bd/usr/local/bin"
chmod 1777 "$bd/tmp"
copy_with_libs "$bd" /bin/sh /bin/mkdir /bin/cp /bin/ls /bin/grep /usr/bin/sha256sum
base_image localhost/petstore-test-builder-base "$bd" 'ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/root'

step "building the Dockerfile"
"${B[@]}" bud --isolation chroot --format docker --quiet \
  --build-arg BUILDER_IMAGE=localhost/petstore-test-builder-base \
  --build-arg RUNTIME_IMAGE=localhost/petstore-test-runtime-base \
  -t localhost/petstore:test . >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; fail "buildah bud"; }

step "building the pick stage with TARGETARCH=arm64 (as docker buildx --platform linux/arm64 sets it): the arm64 binary"
"${B[@]}" bud --isolation chroot --quiet --build-arg TARGETARCH=arm64 --target pick \
  --build-arg BUILDER_IMAGE=localhost/petstore-test-builder-base \
  -t localhost/petstore-pick:arm64 . >"$work/build-arm64.log" 2>&1 || { cat "$work/build-arm64.log" >&2; fail "buildah bud --build-arg TARGETARCH=arm64"; }
pick=$("${B[@]}" from --pull-never localhost/petstore-pick:arm64)
got=$("${B[@]}" run --isolation chroot "$pick" -- sha256sum /out/petstore | cut -d' ' -f1)
want=$(grep "  petstore-$version-linux-arm64\$" dist/release/SHA256SUMS | cut -d' ' -f1)
[[ -n "$want" && "$got" == "$want" ]] || fail "the arm64 build's /out/petstore has sha256 $got, not petstore-$version-linux-arm64's $want"
"${B[@]}" rm "$pick" >/dev/null

step "checking the image configuration"
config() { "${B[@]}" inspect --type image --format "$1" localhost/petstore:test; }
expect_config() { # TEMPLATE EXPECTED
  local got
  got=$(config "$1")
  [[ "$got" == "$2" ]] || fail "$1 is '$got', expected '$2'"
}
expect_config '{{.Docker.Config.User}}' '65532:65532'
expect_config '{{range $p, $_ := .Docker.Config.ExposedPorts}}{{$p}} {{end}}' '8080/tcp '
expect_config '{{range $v, $_ := .Docker.Config.Volumes}}{{$v}} {{end}}' '/var/lib/petstore '
expect_config '{{.Docker.Config.Entrypoint}}' '[/usr/local/bin/petstore]'
expect_config '{{.Docker.Config.Healthcheck.Test}}' '[CMD /usr/local/bin/petstore healthcheck]'
expect_config '{{.Docker.Config.StopSignal}}' 'SIGTERM'
echo "image-test: image localhost/petstore:test, $("${B[@]}" images --format '{{.Size}}' localhost/petstore:test)"

step "running the image"
ctr=$("${B[@]}" from --pull-never localhost/petstore:test)
run() { "${B[@]}" run --isolation chroot "$@"; }
printed=$(run "$ctr" -- /usr/local/bin/petstore --version)
expected="petstore $version (commit $(build_commit), target $target)"
[[ "$printed" == "$expected" ]] || fail "--version printed '$printed', expected '$expected'"
[[ "$(run "$ctr" -- /usr/local/bin/petstore healthcheck 2>/dev/null; echo $?)" == 1 ]] || fail "healthcheck passed with no server"

# keys add as the image's user, into a directory it owns: the file is made 0600 and owned by 65532.
mkdir -p "$work/etc"
chown 65532:65532 "$work/etc"
token=$(run --volume "$work/etc:/etc/petstore" "$ctr" \
  -- /usr/local/bin/petstore keys add --keys /etc/petstore/keys.json --consumer ops --plan pro)
[[ "$token" =~ ^psk_[0-9A-Za-z]{38}$ ]] || fail "keys add printed '$token', not a token alone"

port=$(node -e 's=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
"${B[@]}" config --env PORT="$port" --env PETSTORE_KEYS_FILE=/etc/petstore/keys.json "$ctr"
run --volume "$work/etc:/etc/petstore:ro" "$ctr" \
  -- /usr/local/bin/petstore >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  grep -q '"msg":"listening"' "$work/server.log" && break
  kill -0 "$server_pid" 2>/dev/null || fail "the server exited at start"
  sleep 0.1
done
grep -q "\"address\":\"http://0.0.0.0:$port\"" "$work/server.log" || fail "no listening line on port $port"
grep -q '"keysByPlan":{"pro":1}' "$work/server.log" || fail "the keys file was not loaded"

# The image's HEALTHCHECK, exactly as configured, inside the container (it reads $PORT).
health_cmd=$(config '{{range $i, $a := .Docker.Config.Healthcheck.Test}}{{if $i}}{{$a}} {{end}}{{end}}')
# shellcheck disable=SC2086 # the command's words
run "$ctr" -- $health_cmd || fail "HEALTHCHECK command '$health_cmd' exited $?"
[[ "$(curl -s "http://127.0.0.1:$port/healthz")" == '{"status":"ok"}' ]] || fail "/healthz"
[[ "$(curl -s "http://127.0.0.1:$port/readyz")" == '{"status":"ready","limiter":"memory"}' ]] || fail "/readyz"
created=$(curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"name":"Container Cat","categoryId":3}' "http://127.0.0.1:$port/v1/pets")
[[ "$created" == '{"id":1,"name":"Container Cat","categoryId":3,"status":"available"}' ]] || fail "POST gave $created"
# buildah run gives the VOLUME a fresh volume made from the image's directory, as docker does
# for a new named volume: the database is there, made by the image's user.
db=$(find "$work/storage" -path '*/buildah-volumes/*/petstore.db')
[[ -n "$db" ]] || fail "no petstore.db in the container's /var/lib/petstore volume"
owner=$(stat -c %u:%g "$db")
[[ "$owner" == 65532:65532 ]] || fail "petstore.db belongs to $owner, not the image's user 65532"

app_pid=$(app_pids "$server_pid")
[[ -n "$app_pid" ]] || fail "cannot find the server's process under buildah run ($server_pid)"
kill -TERM "$app_pid"
code=0
wait "$server_pid" || code=$?
server_pid=""
[[ $code == 0 ]] || fail "SIGTERM: exit code $code"
grep -q '"msg":"stopped"' "$work/server.log" || fail "no 'stopped' line after SIGTERM"
step "ok: built, configured as expected, served, health-checked, stored a pet as 65532, stopped cleanly"
