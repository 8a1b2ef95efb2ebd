#!/usr/bin/env bash
# `make lint`'s link check (remark-validate-links, configured in .remarkrc.mjs): every relative
# link and #anchor of the repository's Markdown resolves to a file and a heading, offline.
# It first proves it fails on a broken anchor, in this page and in another, so a pass means something.
# Then each page of the documentation must say who it is for in its title, and each shell block of
# docs/ which test runs it, or why none does.
set -euo pipefail
cd "$(dirname "$0")/.."
remark() { node_modules/.bin/remark --frail --quiet --no-stdout --no-color "$@"; }

probe=$(mktemp -d "$PWD/.links-selftest.XXXXXX")
trap 'rm -rf "$probe"' EXIT
printf '# Page\n\n## Here\n\n[fine](#here) and [broken](#not-here)\n' >"$probe/page.md"
printf '# Other\n\n[fine](page.md#here) and [broken](page.md#gone)\n' >"$probe/other.md"
if out=$(remark "$probe" 2>&1); then
  echo "links: the self-check passed broken anchors; the link check proves nothing" >&2
  exit 1
fi
for want in 'Cannot find heading for `#not-here`' 'Cannot find heading for `#gone`'; do
  grep -qF "$want" <<<"$out" || { printf 'links: the self-check did not report %s:\n%s\n' "$want" "$out" >&2; exit 1; }
done
[[ $(grep -c 'Cannot find' <<<"$out") == 2 ]] || { printf 'links: the self-check reported more than the two:\n%s\n' "$out" >&2; exit 1; }
rm -rf "$probe"

remark .
echo "links: every link and anchor resolves"

# Each page of the documentation says who it is for in its first line, its title.
for page in docs/*.md docs/decisions/*.md ARCHITECTURE.md CHANGELOG.md SECURITY.md contract/README.md; do
  head -n 1 "$page" | grep -qE '^# .*\b[Ff]or\b' || { echo "links: $page: the first line does not say who the page is for" >&2; exit 1; }
done

# Each shell block of docs/ says, in the comment just before it, which test runs it or why none does.
for page in docs/*.md docs/decisions/*.md; do
  awk -v page="$page" '/^```sh/ && prev !~ /^<!-- (tested|not run)/ { print page ":" NR ": a shell block without a <!-- tested: ... --> or <!-- not run ... --> line before it"; bad = 1 }
    { prev = $0 } END { exit bad }' "$page" >&2 || exit 1
done

