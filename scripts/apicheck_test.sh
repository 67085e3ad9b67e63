#!/usr/bin/env bash
# Tests scripts/apicheck.sh on a small repository it builds in a temporary
# directory (two modules in a go.work, a main package, a CHANGELOG): no
# release yet passes; after the release, removing exported names without a
# CHANGELOG entry fails and names each of them, and passes once they are
# recorded; a fresh clone without tags finds the baseline from the
# CHANGELOG; a tag wins over the CHANGELOG; scripts/release.sh makes the
# release commit and the tags. Then the same on a clone of this repository
# with a constant of the api module changed. Run by .ci/run; about 40 s.
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

# The release commit, without tags (a clone of a repository with tags has them).
bash "$here/release.sh" v0.1.0 --no-tag "$repo" >/dev/null
release=$(git rev-parse HEAD)
if [ "$(git log -1 --format=%s)" = "Release v0.1.0" ] && grep -qx '## v0.1.0' CHANGELOG.md; then ok "release.sh completes the heading in its own commit"; else bad "release.sh: $(git log -1 --format=%s)"; fi

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

# release.sh tags every module; the tags are then the baseline.
git tag -d v0.1.0 sub/v0.1.0 >/dev/null
printf '# Changelog\n\n## Unreleased\n\n### Breaking\n\n## v0.2.0 (in preparation)\n\n### Breaking\n\n- `lib.Gone`, `pkg.T.B`, `sub.S`: removed.\n\n## v0.1.0\n\nThe first release.\n' >CHANGELOG.md
git commit -q -am "prepare v0.2.0"
run "$repo"
if [ $rc -eq 0 ] && grep -q "recorded: sub.S" <<<"$out"; then ok "entries moved from Unreleased to the release in preparation still count"; else bad "in preparation: rc=$rc: $out"; fi
set +e
out=$(bash "$here/release.sh" v0.2.0 "$repo" 2>&1)
rc=$?
set -e
if [ $rc -eq 0 ] && [ "$(git cat-file -t v0.2.0)" = tag ] && [ "$(git cat-file -t sub/v0.2.0)" = tag ] &&
	[ "$(git rev-parse 'v0.2.0^{commit}')" = "$(git rev-parse HEAD)" ] && grep -q "unchanged since v0.2.0 (.*tag v0.2.0)" <<<"$out"; then
	ok "release.sh v0.2.0: annotated tags v0.2.0 and sub/v0.2.0 on the release commit, the new baseline"
else
	bad "release.sh v0.2.0: rc=$rc: $out"
fi
set +e
out=$(bash "$here/release.sh" v0.3.0 "$repo" 2>&1)
rc=$?
set -e
if [ $rc -ne 0 ] && grep -q "no \"## v0.3.0 (in preparation" <<<"$out"; then ok "release.sh refuses a version with no entry in preparation"; else bad "release.sh v0.3.0: rc=$rc: $out"; fi

# The same on a clone of this repository (its go.work, the root module
# named cad, examples with only main packages): a release made in the
# clone, then a constant of the api module changed (about 20 s: only the
# api module differs from the release).
real=$tmp/real
git clone -q "$here/.." "$real"
cd "$real"
git config user.email test@example.com
git config user.name test
awk 'done == 0 && /^## v[0-9]/ { print "## v9.9.9\n\nA test release.\n"; done = 1 } { print }' CHANGELOG.md >"$tmp/cl" && mv "$tmp/cl" CHANGELOG.md
git commit -q -am "test release v9.9.9"
sed -i 's|^\(\tGroupName = \)"porch.kpt.dev"|\1"porch.example.com"|; s|^const GroupName = "porch.kpt.dev"|const GroupName = "porch.example.com"|' api/porch/v1alpha1/register.go
run "$real"
if [ $rc -ne 0 ] && grep -q "NOT RECORDED: api/porch/v1alpha1.GroupName " <<<"$out" && grep -q "examples: only main and internal packages" <<<"$out"; then
	ok "this repository: a changed constant of the api module without an entry fails"
else
	bad "this repository, unrecorded: rc=$rc: $out"
fi
awk '{ print } /^### Breaking/ && done == 0 { print "\n- `api/porch/v1alpha1.GroupName`: test."; done = 1 }' CHANGELOG.md >"$tmp/cl" && mv "$tmp/cl" CHANGELOG.md
run "$real"
if [ $rc -eq 0 ] && grep -q "recorded: api/porch/v1alpha1.GroupName" <<<"$out"; then ok "this repository: with the entry it passes"; else bad "this repository, recorded: rc=$rc: $out"; fi

echo "apicheck_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
