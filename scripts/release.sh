#!/usr/bin/env bash
# release: makes the release commit of version vX.Y.Z and, unless
# --no-tag, its annotated tags, one per module of go.work, in the form go
# get resolves (vX.Y.Z for the root module, D/vX.Y.Z for the module in
# directory D).
#
# CHANGELOG.md must hold the release's entry under the heading
# "## vX.Y.Z (in preparation...)": the release commit is the one that
# makes that heading exactly "## vX.Y.Z", which is how the entry names its
# commit and how scripts/apicheck.sh finds the baseline in a clone without
# tags. Run it on a clean main, after everything the release holds is
# merged; it then runs scripts/apicheck.sh (the new baseline: nothing to
# compare) and prints the command that pushes the tags. It pushes nothing.
#
# Usage: scripts/release.sh vX.Y.Z [--no-tag] [repository root]
set -euo pipefail
die() { printf 'release: %s\n' "$*" >&2; exit 1; }

v=${1:-}
[[ $v =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "usage: scripts/release.sh vX.Y.Z [--no-tag] [repository root]"
shift
tag=true
if [ "${1:-}" = --no-tag ]; then
	tag=false
	shift
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "${1:-$here/..}" && pwd)
cd "$root"

git diff --quiet && git diff --cached --quiet || die "uncommitted changes in $root"
grep -q "^## $v (in preparation" CHANGELOG.md || die "CHANGELOG.md has no \"## $v (in preparation...)\" heading to complete"
modules=$(go work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)",\{0,1\}$/\1/p' | sed 's|^\./||; s|/$||; s|^$|.|')
tags=()
for m in $modules; do
	if [ "$m" = . ]; then t=$v; else t=$m/$v; fi
	if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
		die "tag $t exists already"
	fi
	tags+=("$t")
done

sed -i "s/^## $v (in preparation.*\$/## $v/" CHANGELOG.md
git commit -q -m "Release $v" -- CHANGELOG.md
commit=$(git rev-parse HEAD)
printf 'release: %s is the release commit of %s\n' "$(git rev-parse --short HEAD)" "$v"
if $tag; then
	for t in "${tags[@]}"; do
		git tag -a "$t" -m "$t" "$commit"
	done
	printf 'release: tagged %s\n' "${tags[*]}"
fi
bash "$here/apicheck.sh" "$root"
if $tag; then
	printf 'release: to publish: git push origin %s\n' "${tags[*]}"
fi
