#!/usr/bin/env bash
# Tests scripts/apicheck.sh on a small repository it builds in a temporary
# directory (two modules in a go.work, a main package, a CHANGELOG): no
# release yet passes; after the release, removing exported names without a
# CHANGELOG entry fails and names each of them, and passes once they are
# recorded; a fresh clone without tags finds the baseline from the
# CHANGELOG; a tag wins over the CHANGELOG. Run by .ci/run; about 30 s.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check=$here/apicheck.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$*"; }
bad() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }

# One apidiff for every run.
version=$(sed -n 's/^APIDIFF_VERSION=//p' "$check")
GOBIN="$tmp/bin" GOWORK=off go install "golang.org/x/exp/cmd/apidiff@$version"
export APIDIFF=$tmp/bin/apidiff

repo=$tmp/repo
mkdir -p "$repo/pkg" "$repo/sub" "$repo/cmd/tool"
cd "$repo"
git init -q -b main .
git config user.email test@example.com
git config user.name test
printf 'go 1.26.0\n\nuse (\n\t.\n\t./sub\n)\n' >go.work
printf 'module example.com/lib\n\ngo 1.26.0\n' >go.mod
printf 'module example.com/lib/sub\n\ngo 1.26.0\n' >sub/go.mod
printf '// Package lib is a test library.\npackage lib\n\n// Keep stays.\nfunc Keep() {}\n\n// Gone goes.\nfunc Gone() {}\n' >lib.go
printf '// Package p holds T.\npackage p\n\n// T has a field.\ntype T struct{ A, B int }\n' >pkg/p.go
printf '// Package sub is a second module.\npackage sub\n\n// S goes.\nfunc S() {}\n' >sub/s.go
printf '// Command tool is a main package.\npackage main\n\n// Exported is no API.\nfunc Exported() {}\n\nfunc main() {}\n' >cmd/tool/main.go
unreleased='# Changelog\n\n## Unreleased\n\n### Breaking\n\n### Added\n\n'
printf "$unreleased"'## v0.1.0 (in preparation)\n\nNot released yet.\n' >CHANGELOG.md
git add -A && git commit -q -m "before any release"

run() { # run DIR: the check's output in $out, its status in $rc
	set +e
	out=$(bash "$check" "$1" 2>&1)
	rc=$?
	set -e
}

run "$repo"
if [ $rc -eq 0 ] && grep -q "no baseline" <<<"$out"; then ok "no release (a heading with a note is none): passes, saying there is no baseline"; else bad "no release: rc=$rc: $out"; fi

printf "$unreleased"'## v0.1.0\n\nThe first release: the commit adding this entry.\n' >CHANGELOG.md
git add -A && git commit -q -m "release v0.1.0"
release=$(git rev-parse HEAD)

run "$repo"
if [ $rc -eq 0 ] && grep -q "unchanged since v0.1.0" <<<"$out"; then ok "at the release: passes"; else bad "at the release: rc=$rc: $out"; fi

# Remove exported names in both modules, and one in the main package.
printf '// Package lib is a test library.\npackage lib\n\n// Keep stays.\nfunc Keep() {}\n' >lib.go
printf '// Package p holds T.\npackage p\n\n// T has a field.\ntype T struct{ A int }\n' >pkg/p.go
printf '// Package sub is a second module.\npackage sub\n\n// Other replaces S.\nfunc Other() {}\n' >sub/s.go
printf '// Command tool is a main package.\npackage main\n\nfunc main() {}\n' >cmd/tool/main.go
git add -A && git commit -q -m "remove Gone, T.B, sub.S and tool's Exported"

run "$repo"
if [ $rc -ne 0 ]; then ok "removed names without an entry: fails"; else bad "removed names without an entry: passed: $out"; fi
for name in lib.Gone pkg.T.B sub.S; do
	if grep -q "NOT RECORDED: $name " <<<"$out"; then ok "names $name"; else bad "does not name $name: $out"; fi
done
if grep -q "Exported" <<<"$out"; then bad "a main package's name counted as API: $out"; else ok "a main package's names are no API"; fi

# The same from a fresh clone, which has no tags here: the CHANGELOG gives the baseline.
git clone -q "$repo" "$tmp/clone"
run "$tmp/clone"
if [ $rc -ne 0 ] && grep -q "comparing with v0.1.0 (${release:0:7}, the commit adding" <<<"$out"; then ok "a clone without tags: the baseline is the commit adding the release entry, and it fails"; else bad "a clone without tags: rc=$rc: $out"; fi

# Record two of three: still fails, naming the third only.
printf '# Changelog\n\n## Unreleased\n\n### Breaking\n\n- `lib.Gone`: removed.\n- `pkg.T.B`: removed.\n\n### Added\n\n- `sub.S` moved.\n\n## v0.1.0\n\nThe first release: the commit adding this entry.\n' >CHANGELOG.md
run "$repo"
if [ $rc -ne 0 ] && grep -q "NOT RECORDED: sub.S " <<<"$out" && ! grep -q "NOT RECORDED: lib.Gone" <<<"$out"; then ok "an entry outside Breaking does not count"; else bad "partial entries: rc=$rc: $out"; fi

printf '# Changelog\n\n## Unreleased\n\n### Breaking\n\n- `lib.Gone`: removed.\n- `pkg.T.B`: removed.\n- `sub.S`: renamed Other.\n\n### Added\n\n## v0.1.0\n\nThe first release: the commit adding this entry.\n' >CHANGELOG.md
run "$repo"
if [ $rc -eq 0 ] && grep -q "ok: no unrecorded" <<<"$out"; then ok "every removal recorded under Breaking: passes"; else bad "recorded: rc=$rc: $out"; fi
git checkout -q CHANGELOG.md

# A tag wins over the CHANGELOG: tagged on the removal, nothing is incompatible.
git tag v0.1.0 HEAD
git tag sub/v0.1.0 HEAD
run "$repo"
if [ $rc -eq 0 ] && grep -q "tag v0.1.0" <<<"$out"; then ok "tags v0.1.0 and sub/v0.1.0 are the baseline when present"; else bad "tags: rc=$rc: $out"; fi

echo "apicheck_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
