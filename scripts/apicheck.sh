#!/usr/bin/env bash
# apicheck: compares the exported API of every module of go.work with the
# last release's commit (golang.org/x/exp/cmd/apidiff) and fails on an
# incompatible change that CHANGELOG.md's "## Unreleased" section does not
# record.
#
# The baseline. The last release is the first heading of CHANGELOG.md
# that is exactly "## vX.Y.Z" (a heading with more on its line, such as
# "## v0.2.0 (in preparation)", is not a release yet). Its commit, for a
# module in directory D, is the tag D/vX.Y.Z (vX.Y.Z for the root module)
# when the clone has it, else the newest commit that added or changed
# that heading line in CHANGELOG.md (the release entry says that commit is
# the release), found in the history, so a clone without tags works; a shallow clone without that commit fails and says so. No
# release heading: there is no baseline and the check passes, saying so. A
# module that did not exist at the baseline, or whose importable packages
# are all main packages (examples), has no API to compare.
#
# The rule. Each incompatible change apidiff reports is named by the
# package path relative to the repository root and the name apidiff prints
# (pipeline.BlueprintAnnotation, api/porch/v1alpha1.PackageRevisionSpec.Foo,
# cad.Open for the root package, "package repository/foo" for a removed
# package). That text must appear, anywhere, in the lines of the
# "### Breaking" subsection of "## Unreleased" (or of a release entry still
# in preparation, "## vX.Y.Z (in preparation...)"). The script prints the
# names it misses.
#
# Usage: scripts/apicheck.sh [repository root]   (default: this script's)
# Environment: APIDIFF, an apidiff binary to use instead of installing the
# pinned version into a temporary directory. Nothing is written in the
# repository: the baseline is extracted with git archive into a temporary
# directory, removed at exit.
set -euo pipefail

APIDIFF_VERSION=v0.0.0-20261113113407-e3970619a1a4
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$root"
log() { printf 'apicheck: %s\n' "$*"; }
die() { printf 'apicheck: %s\n' "$*" >&2; exit 1; }

[ -f CHANGELOG.md ] || die "no CHANGELOG.md in $root"
release=$(sed -n 's/^## \(v[0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\)$/\1/p' CHANGELOG.md | head -n 1)
if [ -z "$release" ]; then
	log "no release in CHANGELOG.md (no \"## vX.Y.Z\" heading): no baseline, nothing to compare"
	exit 0
fi

# The Breaking lines of the Unreleased section and of a release in
# preparation (its entries were Unreleased's).
breaking=$(awk '
	/^## / { in_unreleased = ($2 == "Unreleased" || $0 ~ /^## v[0-9]+\.[0-9]+\.[0-9]+ \(in preparation/); in_breaking = 0; next }
	in_unreleased && /^### / { in_breaking = ($2 == "Breaking"); next }
	in_unreleased && in_breaking { print }
' CHANGELOG.md)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The commit that added the release heading, for modules without a tag.
heading_commit() {
	if [ -z "${heading_commit_cache:-}" ]; then
		heading_commit_cache=$(git log --format=%H -G"^## ${release//./\\.}\$" -- CHANGELOG.md | head -n 1)
		if [ -z "$heading_commit_cache" ]; then
			if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
				die "no commit adds \"## $release\" to CHANGELOG.md in this shallow clone and no $release tag: fetch the history or the tags (git fetch --unshallow --tags)"
			fi
			die "no commit in the history adds \"## $release\" to CHANGELOG.md, and there is no $release tag"
		fi
	fi
	printf '%s\n' "$heading_commit_cache"
}

if [ -n "${APIDIFF:-}" ]; then
	apidiff=$APIDIFF
else
	log "installing golang.org/x/exp/cmd/apidiff@$APIDIFF_VERSION"
	GOBIN="$tmp/bin" GOWORK=off go install "golang.org/x/exp/cmd/apidiff@$APIDIFF_VERSION"
	apidiff=$tmp/bin/apidiff
fi

# Modules of go.work, as directories relative to the root.
modules=$(go work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)",\{0,1\}$/\1/p' | sed 's|^\./||; s|/$||; s|^$|.|')
[ -n "$modules" ] || die "no modules in go.work"
others=()
for m in $modules; do
	[ "$m" = . ] || others+=(":(exclude)$m")
done

missing=()
status=0
for m in $modules; do
	modpath=$(cd "$m" && GOWORK=off go list -m)
	# The files an API comes from: the module's Go files and its go.mod.
	if [ "$m" = . ]; then
		prefix="" name=$(basename "$modpath")
		pathspec=(':(glob)**/*.go' go.mod "${others[@]}")
	else
		prefix="$m/" name=$m
		pathspec=(":(glob)$m/**/*.go" "$m/go.mod")
	fi
	tag="$prefix$release"
	if git rev-parse -q --verify "refs/tags/$tag^{commit}" >/dev/null; then
		base=$(git rev-parse "refs/tags/$tag^{commit}")
		from="tag $tag"
	else
		base=$(heading_commit)
		from="the commit adding \"## $release\" to CHANGELOG.md"
	fi
	short=$(git rev-parse --short "$base")
	if ! git cat-file -e "$base:${prefix}go.mod" 2>/dev/null; then
		log "$name: not a module at $release ($short): nothing to compare"
		continue
	fi
	pkgs=$(cd "$m" && GOWORK=off go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./... | grep -v -e '/internal/' -e '/internal$' || true)
	if [ -z "$pkgs" ]; then
		log "$name: only main and internal packages: no importable API"
		continue
	fi
	if git diff --quiet "$base" -- "${pathspec[@]}"; then
		log "$name: unchanged since $release ($short, $from)"
		continue
	fi
	log "$name: comparing with $release ($short, $from)"
	old=$tmp/old-$short
	if [ ! -d "$old" ]; then
		mkdir -p "$old"
		git archive "$base" | tar -x -C "$old"
	fi
	ex=$tmp/$(printf '%s' "$m" | tr '/.' '__')
	(cd "$old/$m" && GOWORK=off "$apidiff" -m -w "$ex.old" "$modpath" 2>/dev/null) || die "$name: the API at $release ($short) could not be loaded (GOWORK=off go build ./... in it fails?)"
	(cd "$m" && GOWORK=off "$apidiff" -m -w "$ex.new" "$modpath" 2>/dev/null) || die "$name: the current API could not be loaded (GOWORK=off go build ./... fails?)"
	report=$("$apidiff" -m -incompatible "$ex.old" "$ex.new" 2>/dev/null)
	[ -n "$report" ] || continue
	# Main packages cannot be imported: their exported names are no API.
	mains=$({ (cd "$m" && GOWORK=off go list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' ./...)
		(cd "$old/$m" && GOWORK=off go list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' ./...); } | sort -u)
	while IFS= read -r line; do
		change=${line#- }
		subject=${change%%: *}
		case $subject in
		"package $modpath"*) rel=${subject#"package $modpath"}; rel=${rel#/}; token="package $prefix$rel"; token=${token%/} ;;
		./*) token="$prefix${subject#./}" ;;
		*) token="$name.$subject" ;; # the module's root package
		esac
		is_main=false
		for p in $mains; do
			rel=${p#"$modpath"}; rel=$prefix${rel#/}
			case $token in "$rel."* | "package $rel") is_main=true ;; esac
		done
		if $is_main; then
			continue
		fi
		if grep -qF -- "$token" <<<"$breaking"; then
			log "  recorded: $token (${change#*: })"
		else
			log "  NOT RECORDED: $token (${change#*: })"
			missing+=("$token")
			status=1
		fi
	done <<<"$report"
done

if [ "$status" -ne 0 ]; then
	{
		echo "apicheck: incompatible API changes since $release that CHANGELOG.md does not record."
		echo "Name each under \"## Unreleased\" / \"### Breaking\", e.g.:"
		for t in "${missing[@]}"; do echo "- \`$t\`: <what changed and what to use instead>"; done
	} >&2
	exit 1
fi
log "ok: no unrecorded incompatible change since $release"
