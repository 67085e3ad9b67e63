#!/usr/bin/env bash
# doccheck: fails when `go doc PKG` (the package comment and its index) of a
# public package (not internal, not main) of any module of go.work is longer
# than a screen, 150 lines. Formats, protocols and performance notes belong in
# a DESIGN.md beside the package (issue 33). Usage: scripts/doccheck.sh [max]
set -euo pipefail
max=${1:-150}
cd "$(dirname "$0")/.."
modules=$(go work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)",\{0,1\}$/\1/p')
status=0
count=0
for m in $modules; do
	for p in $(cd "$m" && go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./... | grep -v -e '/internal/' -e '/internal$' || true); do
		n=$(cd "$m" && go doc "$p" | wc -l)
		count=$((count + 1))
		if [ "$n" -gt "$max" ]; then
			echo "doccheck: go doc $p is $n lines, more than $max: move formats, protocols and performance notes to a DESIGN.md beside it" >&2
			status=1
		fi
	done
done
[ "$status" -eq 0 ] && echo "doccheck: go doc of $count public packages, each within $max lines"
exit "$status"
