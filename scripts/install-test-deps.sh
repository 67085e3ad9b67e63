#!/usr/bin/env bash
# Installs what cad's tests need when it is missing: git with
# git-http-backend (a real git server on loopback and an independent
# witness), the CNCF distribution registry (docker-registry, started by
# the ocirepo tests on loopback with their own config) and kubectl (the
# reference server's tests drive it; best effort, they skip without it).
# Needs root to install packages; does nothing when all are present.
set -euo pipefail
log() { printf '==> %s\n' "$*"; }

need_apt=()
command -v git >/dev/null 2>&1 || need_apt+=(git)
if command -v git >/dev/null 2>&1 && [ ! -x "$(git --exec-path)/git-http-backend" ]; then
	need_apt+=(git)
fi
# The CNCF distribution registry, started by the ocirepo tests on loopback
# with their own config; its Debian service is not needed and not started.
command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] || need_apt+=(docker-registry)
if [ ${#need_apt[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-test-deps: missing ${need_apt[*]}; install it (apt-get install ${need_apt[*]})" >&2
		exit 1
	fi
	log "installing ${need_apt[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# Keep package services (docker-registry's) from being started: the
	# tests run their own registry. policy-rc.d exit 101 = "not allowed".
	policy_rc=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy_rc=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy_rc" && chmod +x "$policy_rc"
	fi
	apt-get install -y -qq "${need_apt[@]}" >/dev/null
	[ -z "$policy_rc" ] || rm -f "$policy_rc"
fi

# kubectl, for the reference server's tests: Debian's kubernetes-client
# when there is none. Best effort: without kubectl those tests skip.
if ! command -v kubectl >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ]; then
		log "installing kubectl (kubernetes-client)"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -qq kubernetes-client >/dev/null 2>&1 ||
			{ apt-get update -qq && apt-get install -y -qq kubernetes-client >/dev/null 2>&1; } ||
			echo "install-test-deps: kubectl not installed; the kubectl tests will skip" >&2
	else
		echo "install-test-deps: kubectl not found; the kubectl tests will skip" >&2
	fi
fi

# kube-apiserver and etcd, for the Kubernetes tests (the operator, the
# kubetest harness): built once from the Go module proxy through the
# tools/kube module (k8s.io/kubernetes v1.37.2 with its staging modules at
# v0.37.2; etcd v3.7) into a cache directory that the harness looks in.
# Building needs no root; from cold caches on a loaded two-core machine it
# took about an hour, with warm caches a few minutes. tools/kube selects the
# workspace's versions of the modules it shares with it
# (scripts/kubealign.sh), so the packages compiled here serve the examples'
# build and vet too.
kube_bin="${CAD_KUBE_BIN:-$HOME/.cache/cad/kube-v1.37.2/bin}"
root="$(cd "$(dirname "$0")/.." && pwd)"
# The version is stamped as Kubernetes' own build does, so that the server
# reports v1.37.2 (kubectl version, discovery) rather than v0.0.0-master; a
# binary built before without it is built again.
kube_version_pkg=k8s.io/component-base/version
kube_ldflags="-X $kube_version_pkg.gitVersion=v1.37.2 -X $kube_version_pkg.gitMajor=1 -X $kube_version_pkg.gitMinor=37 -X $kube_version_pkg.gitTreeState=clean"
if [ -x "$kube_bin/kube-apiserver" ] && ! "$kube_bin/kube-apiserver" --version 2>/dev/null | grep -q 'v1\.37\.2'; then
	log "kube-apiserver in $kube_bin does not report v1.37.2: building it again"
	rm -f "$kube_bin/kube-apiserver"
fi
if [ ! -x "$kube_bin/kube-apiserver" ]; then
	log "building kube-apiserver v1.37.2 into $kube_bin"
	(cd "$root/tools/kube" && GOWORK=off go build -ldflags "$kube_ldflags" -o "$kube_bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
fi
if [ ! -x "$kube_bin/etcd" ]; then
	log "building etcd into $kube_bin"
	(cd "$root/tools/kube" && GOWORK=off go build -o "$kube_bin/etcd" go.etcd.io/etcd/server/v3)
fi
