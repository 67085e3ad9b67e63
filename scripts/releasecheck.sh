#!/usr/bin/env bash
# releasecheck: builds the README's first program, as a user outside the
# repository would, against the last release of the root module resolved
# by `go get` through a module proxy, not through a replace directive.
#
# The last release is the first heading of CHANGELOG.md that is exactly
# "## vX.Y.Z"; its commit is the tag vX.Y.Z when the clone has it, else the
# newest commit that made that heading line (as scripts/apicheck.sh finds
# it). The script serves that commit's root module (git archive, without
# the directories that are modules of their own) from a file:// module
# proxy in a temporary directory, makes a new module there whose main.go is
# the release commit's README program, runs `go get
# github.com/configasdata/cad@vX.Y.Z` and `go build`, and runs the program.
# Dependencies come from the module cache or the Go module proxy. No
# release heading: nothing to check, and it says so.
#
# Usage: scripts/releasecheck.sh [repository root]
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$root"
log() { printf 'releasecheck: %s\n' "$*"; }
die() { printf 'releasecheck: %s\n' "$*" >&2; exit 1; }

mod=github.com/configasdata/cad
v=$(sed -n 's/^## \(v[0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\)$/\1/p' CHANGELOG.md | head -1)
if [ -z "$v" ]; then
	log "CHANGELOG.md names no release yet: nothing to check"
	exit 0
fi
if commit=$(git rev-parse -q --verify "refs/tags/$v^{commit}"); then
	:
else
	commit=$(git log -n 1 --format=%H -G "^## $v\$" -- CHANGELOG.md)
	[ -n "$commit" ] || die "no tag $v and no commit that made the heading \"## $v\" (a shallow clone?)"
fi
log "$mod@$v is commit $(git rev-parse --short "$commit")"

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

# The module's files: the commit's tree without nested modules.
excl=()
while IFS= read -r gomod; do
	d=$(dirname "$gomod")
	[ "$d" = . ] || excl+=(":(exclude)$d")
done < <(git ls-tree -r --name-only "$commit" | grep '\(^\|/\)go\.mod$')
proxy="$tmp/proxy/$mod/@v"
mkdir -p "$proxy" "$tmp/src"
git archive "$commit" -- . "${excl[@]}" | tar -x -C "$tmp/src"
# Zipped by a small Go program (archive/zip): every file under the
# module path's prefix, as the module proxy protocol has it.
mkdir -p "$tmp/zipper"
cat >"$tmp/zipper/main.go" <<'GO'
package main

import (
	"archive/zip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

func main() {
	src, prefix, out := os.Args[1], os.Args[2], os.Args[3]
	f, err := os.Create(out)
	check(err)
	zw := zip.NewWriter(f)
	check(filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		w, err := zw.Create(prefix + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		r, err := os.Open(path)
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.Copy(w, r)
		return err
	}))
	check(zw.Close())
	check(f.Close())
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
GO
(cd "$tmp/zipper" && GOWORK=off go run main.go "$tmp/src" "$mod@$v" "$proxy/$v.zip")
cp "$tmp/src/go.mod" "$proxy/$v.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$v" "$(git show -s --format=%cI "$commit")" >"$proxy/$v.info"
echo "$v" >"$proxy/list"

# The README's first program at the release.
git show "$commit:README.md" >"$tmp/README.md"
awk '
	/^## A first program in Go$/ { sec = 1; next }
	sec && /^## / { exit }
	sec && /^```go$/ { code = 1; next }
	code && /^```$/ { exit }
	code { print }' "$tmp/README.md" >"$tmp/main.go"
head -1 "$tmp/main.go" | grep -q '^package main$' || die "README.md at $v has no whole program under \"## A first program in Go\""

mkdir -p "$tmp/hello"
mv "$tmp/main.go" "$tmp/hello/main.go"
cd "$tmp/hello"
export GOWORK=off GOFLAGS="-mod=mod -modcacherw" GONOSUMDB=$mod
# The go command's module index (in GOCACHE) trusts a version in the module
# cache never to change: a v$v made from another commit by an earlier run
# would be read with that commit's imports. Off for this build.
export GODEBUG=goindex=0
export GOPROXY="file://$tmp/proxy,${GOPROXY:-https://proxy.golang.org}"
# The module cache may hold this version from an earlier run (of a commit
# that was not the release yet): drop it, before and after.
modcache=$(go env GOMODCACHE)
dropcached() { chmod -R u+w "$modcache/$mod@$v" 2>/dev/null || true; rm -rf "$modcache/$mod@$v" "$modcache/cache/download/$mod/@v/$v".*; }
dropcached
trap 'dropcached; chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
go mod init hello >/dev/null 2>&1
go get "$mod@$v" >/dev/null
go mod tidy >/dev/null
go build -o hello .
out=$(./hello)
want="blueprints:apps/hello@v1/v1"
[ "$out" = "$want" ] || die "the README program built against $mod@$v printed \"$out\", want \"$want\""
log "a new module outside the repository got $mod@$v with go get, built the README's program and ran it: $out"
