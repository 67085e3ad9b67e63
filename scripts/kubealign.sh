#!/usr/bin/env bash
# Checks that tools/kube (the module that builds kube-apiserver and etcd for
# the Kubernetes tests) selects the same version as the go.work workspace of
# every module that gives packages to both: then the go command compiles
# those packages (k8s.io/apiserver, client-go, grpc, otel, ...; about 1,100
# of kube-apiserver's 1,900) once, for the kube build and for the examples'
# build, vet and benchmarks, instead of twice. A compiled package is reused
# only when every package below it is the same version, so one stale
# golang.org/x/sys in tools/kube makes nearly all of them compile again.
#
# Usage: scripts/kubealign.sh      exits 1 and names each differing module
#        scripts/kubealign.sh -w   raises tools/kube's lower versions to the
#                                  workspace's (go get), then checks again
#
# A module where tools/kube needs a higher version than the workspace cannot
# be fixed here (that would lower Kubernetes' own requirement); it is
# reported, and the examples' module would have to raise it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
write=false
[ "${1:-}" = -w ] && write=true

# "path version" of each module that provides a package to the build, the
# version after replacement.
fmt='{{with .Module}}{{if not .Main}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}{{end}}'
modules_ws() {
	(cd "$root" && go list -deps -test -f "$fmt" ./... ./api/... ./examples/... ./helmfn/... ./fnrunner/...) | sort -u
}
modules_kube() {
	(cd "$root/tools/kube" && GOWORK=off go list -deps -f "$fmt" k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3) | sort -u
}

# differ prints "path kube-version workspace-version" for each module both
# builds use at different versions. Through files, so that a failing go list
# stops the script (set -e does not see a process substitution fail).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
differ() {
	modules_kube >"$tmp/kube"
	modules_ws >"$tmp/ws"
	[ -s "$tmp/kube" ] && [ -s "$tmp/ws" ] || { echo "kubealign: go list failed or found no modules" >&2; exit 1; }
	join "$tmp/kube" "$tmp/ws" | awk '$2 != $3'
}

differ >"$tmp/diffs"
diffs=$(cat "$tmp/diffs")
if [ -n "$diffs" ] && $write; then
	gets=()
	while read -r path kube ws; do
		# Raise only. sort -V orders as semver does once a pre-release's
		# "-" is "~" (v1.2.3-0.2026... before v1.2.3).
		if [ "$(printf '%s\n%s\n' "${kube/-/\~}" "${ws/-/\~}" | sort -V | tail -1)" = "${ws/-/\~}" ]; then
			gets+=("$path@$ws")
		fi
	done <<<"$diffs"
	if [ ${#gets[@]} -gt 0 ]; then
		(cd "$root/tools/kube" && GOWORK=off go get "${gets[@]}" && GOWORK=off go mod tidy)
	fi
	differ >"$tmp/diffs"
	diffs=$(cat "$tmp/diffs")
fi
if [ -n "$diffs" ]; then
	echo "kubealign: tools/kube and the workspace select different versions of modules both build" >&2
	echo "kubealign: (module, tools/kube's, the workspace's); fix with: bash scripts/kubealign.sh -w" >&2
	echo "$diffs" >&2
	exit 1
fi
echo "kubealign: tools/kube selects the workspace's version of every module both build"
