#!/usr/bin/env bash
# Runs every test of cad, both modules, with the race detector: the one
# test command of README.md, and what CI (.ci/run) runs.
#
# It installs what the tests need when it is missing (git with
# git-http-backend, used as a real git server on loopback and as an
# independent witness), then checks formatting and vet, builds each module
# on its own, runs the tests with -race, and runs every benchmark once so
# that they keep working. Set CAD_SKIP_BENCH=1 to skip the benchmarks.
set -euo pipefail
cd "$(dirname "$0")"

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
		echo "test.sh: missing ${need_apt[*]}; install it (apt-get install ${need_apt[*]})" >&2
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
command -v go >/dev/null 2>&1 || { echo "test.sh: go is not on PATH (Go 1.26 is required)" >&2; exit 1; }

# Tests that commit with the git CLI need an identity on a fresh machine.
export GIT_AUTHOR_NAME="${GIT_AUTHOR_NAME:-cad test}" GIT_AUTHOR_EMAIL="${GIT_AUTHOR_EMAIL:-test@cad.invalid}"
export GIT_COMMITTER_NAME="${GIT_COMMITTER_NAME:-cad test}" GIT_COMMITTER_EMAIL="${GIT_COMMITTER_EMAIL:-test@cad.invalid}"

modules=(. examples)

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi

for m in "${modules[@]}"; do
	log "build and vet ($m, on its own)"
	(cd "$m" && GOWORK=off go build -o /dev/null ./... && GOWORK=off go vet ./...)
done

status=0
for m in "${modules[@]}"; do
	log "go test -race ($m)"
	(cd "$m" && GOWORK=off go test -race -count=1 -timeout 25m ./...) || status=1
done

if [ "${CAD_SKIP_BENCH:-0}" != 1 ]; then
	for m in "${modules[@]}"; do
		log "benchmarks once ($m)"
		(cd "$m" && GOWORK=off go test -run '^$' -bench . -benchtime 1x -timeout 15m ./...) || status=1
	done
fi

if [ $status -ne 0 ]; then
	log "FAILED"
	exit 1
fi
log "all tests passed"
