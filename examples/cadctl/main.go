// Command cadctl is a porchctl-shaped CLI over cad: it registers
// repositories and manages package revisions (repo reg|get|unreg, rpkg
// init|clone|copy|get|pull|push|propose|approve|reject|propose-delete|del|
// upgrade|deps, the last in direct mode only), and renders and evaluates
// KRM functions as kpt does (fn render, fn eval).
//
// It works in two modes: directly on the repositories listed in a local
// configuration file, with the cad library embedded and no server at all,
// or, with --server URL, against cad's reference server over its
// Kubernetes-style HTTP API.
//
//	cadctl repo reg /path/to/bare.git --name blueprints
//	cadctl rpkg init hello --repository blueprints --workspace v1
//	cadctl rpkg get
//	cadctl fn render ./my-package
//
// Run cadctl --help for the commands and their flags.
package main

import (
	"os"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
