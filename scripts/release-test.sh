#!/usr/bin/env bash
# make release-test: runs scripts/release.test.ts on dist/release/ (make release builds it). The
# linux-arm64 binary runs under Debian's qemu-user-static with the arm64 C library of
# libc6-arm64-cross (/usr/aarch64-linux-gnu); both are installed when missing (CI runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/build-info.sh
source scripts/lib/build-info.sh

qemu=/usr/bin/qemu-aarch64-static
need=()
[[ -x $qemu ]] || need+=(qemu-user-static)
[[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]] || need+=(libc6-arm64-cross)
if ((${#need[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "release-test: needs ${need[*]}: apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  echo "release-test: apt-get install ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }
fi

RELEASE_COMMIT=$(build_commit) RELEASE_QEMU_AARCH64=$qemu \
  node_modules/.bin/bun test --timeout 60000 scripts/release.test.ts
