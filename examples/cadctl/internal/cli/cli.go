package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"

	"github.com/configasdata/cad/fnruntime/wasmfn"
	"github.com/configasdata/cad/pipeline"
)

// Environment variables cadctl reads. Flags win over them.
const (
	// EnvConfig names the direct-mode configuration file (--config).
	EnvConfig = "CADCTL_CONFIG"
	// EnvServer is the reference server's URL (--server).
	EnvServer = "CADCTL_SERVER"
	// EnvNamespace is the namespace (--namespace).
	EnvNamespace = "CADCTL_NAMESPACE"
	// EnvToken is the bearer token sent to the server (--token); the
	// environment keeps it out of process listings.
	EnvToken = "CADCTL_TOKEN"
	// EnvWasmCache is the directory where fn render and fn eval keep the
	// compiled code of wasm functions (--allow-alpha-wasm) across runs;
	// default cadctl/wasm in the user's cache directory.
	EnvWasmCache = "CADCTL_WASM_CACHE"
)

// DefaultNamespace is the namespace of objects when none is given.
const DefaultNamespace = "default"

// Run runs cadctl with args (the command line without the program name),
// reading standard input from os.Stdin, in the process's working directory
// and environment. It returns the process exit code: 0 on success, 1 on any
// failure, with a message on stderr.
func Run(args []string, stdout, stderr io.Writer) int {
	return Invocation{Args: args, Stdin: os.Stdin, Stdout: stdout, Stderr: stderr}.Run(context.Background())
}

// RunWithInput is Run with an explicit standard input, for rpkg push and
// fn eval reading a ResourceList from "-".
func RunWithInput(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Invocation{Args: args, Stdin: stdin, Stdout: stdout, Stderr: stderr}.Run(context.Background())
}

// Invocation is one run of cadctl with everything it depends on, so that
// tests can run many in one process, concurrently.
type Invocation struct {
	// Args is the command line without the program name.
	Args []string
	// Stdin, Stdout and Stderr are the streams; nil Stdin reads nothing,
	// nil Stdout and Stderr discard.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Dir is the working directory relative paths are resolved against,
	// and that of exec functions; default the process's.
	Dir string
	// Env is the environment as KEY=value pairs, read for cadctl's
	// variables and passed to exec functions; nil means os.Environ().
	Env []string
	// Functions are extra function implementations of the fn commands,
	// by image name (as fnruntime.Registry.Register takes it); they
	// replace builtins of the same name. Tests use it for test images.
	Functions map[string]pipeline.Function
}

// Run runs the invocation until it is done or ctx (or an interrupt) stops
// it, and returns the exit code.
func (inv Invocation) Run(ctx context.Context) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	c := &cmdEnv{ctx: ctx, stdin: inv.Stdin, stdout: inv.Stdout, stderr: inv.Stderr, dir: inv.Dir, env: inv.Env, functions: inv.Functions}
	if c.stdin == nil {
		c.stdin = strings.NewReader("")
	}
	if c.stdout == nil {
		c.stdout = io.Discard
	}
	if c.stderr == nil {
		c.stderr = io.Discard
	}
	if c.env == nil {
		c.env = os.Environ()
	}
	if c.dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintf(c.stderr, "Error: %v\n", err)
			return 1
		}
		c.dir = wd
	}
	defer c.close()
	return c.main(inv.Args)
}

// cmdEnv is one invocation: its streams, global options and the client,
// opened on first use.
type cmdEnv struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	dir            string   // the working directory
	env            []string // the environment
	functions      map[string]pipeline.Function
	wasm           *wasmfn.Runtime // fn render and fn eval's, with --allow-alpha-wasm

	global globalFlags
	cl     Client
	path   string // the command path, such as "rpkg get", for messages
}

type globalFlags struct {
	config     string
	server     string
	kubeconfig string
	namespace  string
	// Server mode's credentials and TLS.
	token, caFile, certFile, keyFile string
}

// errHelp is returned after help was printed: exit code 0.
var errHelp = errors.New("help requested")

// errReported is returned after the error was printed: exit code 1.
var errReported = errors.New("error already reported")

// usageError is a command line mistake; it is printed with a hint to run
// --help.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

type command struct {
	name    string
	aliases []string
	short   string
	run     func(c *cmdEnv, args []string) error
}

type group struct {
	name    string
	aliases []string
	short   string
	cmds    []command
}

func groups() []group {
	return []group{
		{name: "repo", aliases: []string{"repository"}, short: "Manage package repositories", cmds: repoCommands()},
		{name: "rpkg", aliases: []string{"rpackage"}, short: "Manage package revisions", cmds: rpkgCommands()},
		{name: "fn", aliases: []string{"function"}, short: "Render and evaluate KRM functions, as kpt does", cmds: fnCommands()},
		{name: "pkg", aliases: []string{"package"}, short: "Create local packages, as kpt pkg does", cmds: pkgCommands()},
	}
}

func (c *cmdEnv) main(args []string) int {
	defer func() {
		if c.cl != nil {
			_ = c.cl.Close()
		}
	}()
	err := c.dispatch(args)
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errReported):
		return 1
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(c.stderr, "Error: %s\n", ue.msg)
		fmt.Fprintf(c.stderr, "Run '%s --help' for usage.\n", strings.TrimSpace("cadctl "+c.path))
		return 1
	}
	fmt.Fprintf(c.stderr, "Error: %s\n", err)
	return 1
}

func (c *cmdEnv) dispatch(args []string) error {
	// Global flags may come before the group; every command accepts them
	// too.
	fs := c.newFlagSet("")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printTopUsage(c.stdout)
			return errHelp
		}
		return usagef("%s", flagErrorText(err))
	}
	args = fs.Args()
	if len(args) == 0 {
		c.printTopUsage(c.stderr)
		return usagef("a command is required")
	}
	if args[0] == "help" {
		c.printTopUsage(c.stdout)
		return errHelp
	}
	var g *group
	for _, gr := range groups() {
		if gr.name == args[0] || contains(gr.aliases, args[0]) {
			g = &gr
			break
		}
	}
	if g == nil {
		return usagef("unknown command %q for \"cadctl\"", args[0])
	}
	c.path = g.name
	if len(args) == 1 || args[1] == "-h" || args[1] == "--help" || args[1] == "help" {
		w := c.stdout
		if len(args) == 1 {
			w = c.stderr
		}
		c.printGroupUsage(w, g)
		if len(args) == 1 {
			return usagef("a %s command is required", g.name)
		}
		return errHelp
	}
	for _, cmd := range g.cmds {
		if cmd.name == args[1] || contains(cmd.aliases, args[1]) {
			c.path = g.name + " " + cmd.name
			return cmd.run(c, args[2:])
		}
	}
	return usagef("unknown command %q for \"cadctl %s\"", args[1], g.name)
}

func (c *cmdEnv) printTopUsage(w io.Writer) {
	fmt.Fprintf(w, "cadctl manages kpt packages in git repositories with the cad library, as porchctl does with Porch.\n\n")
	fmt.Fprintf(w, "Usage:\n  cadctl [--config FILE | --server URL] [-n NAMESPACE] COMMAND SUBCOMMAND [flags]\n\nCommands:\n")
	for _, g := range groups() {
		var names []string
		for _, cmd := range g.cmds {
			names = append(names, cmd.name)
		}
		fmt.Fprintf(w, "  %-6s %s: %s\n", g.name, g.short, strings.Join(names, ", "))
	}
	fmt.Fprintf(w, "\nGlobal flags:\n")
	fs := c.newFlagSet("")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func (c *cmdEnv) printGroupUsage(w io.Writer, g *group) {
	fmt.Fprintf(w, "%s.\n\nUsage:\n  cadctl %s COMMAND [flags]\n\nCommands:\n", g.short, g.name)
	for _, cmd := range g.cmds {
		name := cmd.name
		if len(cmd.aliases) > 0 {
			name += " (" + strings.Join(cmd.aliases, ", ") + ")"
		}
		fmt.Fprintf(w, "  %-34s %s\n", name, cmd.short)
	}
	fmt.Fprintf(w, "\nRun 'cadctl %s COMMAND --help' for a command's flags.\n", g.name)
}

// newFlagSet returns a flag set with the global flags registered.
func (c *cmdEnv) newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.global.config, "config", c.global.config, "direct mode: the file listing the registered repositories (default $"+EnvConfig+" or <user config dir>/cadctl/config.json)")
	fs.StringVar(&c.global.server, "server", c.global.server, "server mode: the URL of cad's reference server (default $"+EnvServer+")")
	fs.StringVar(&c.global.kubeconfig, "kubeconfig", c.global.kubeconfig, "cluster mode: reach Porch's API through the Kubernetes cluster of this kubeconfig (its server, credentials and namespace), where cad's operator and the reference server in cluster mode serve it")
	fs.StringVar(&c.global.namespace, "namespace", c.global.namespace, "the namespace of the objects (default $"+EnvNamespace+" or \""+DefaultNamespace+"\")")
	fs.StringVar(&c.global.namespace, "n", c.global.namespace, "shorthand for --namespace")
	fs.StringVar(&c.global.token, "token", c.global.token, "server mode: bearer token for the server (default $"+EnvToken+")")
	fs.StringVar(&c.global.caFile, "certificate-authority", c.global.caFile, "server mode: PEM CAs that verify the https server")
	fs.StringVar(&c.global.certFile, "client-certificate", c.global.certFile, "server mode: PEM client certificate for TLS client authentication")
	fs.StringVar(&c.global.keyFile, "client-key", c.global.keyFile, "server mode: the PEM key of --client-certificate")
	return fs
}

// cmdSpec describes one command's command line for its usage text.
type cmdSpec struct {
	use   string // "init PACKAGE_NAME"
	short string
	long  string
}

// parse parses args with fs, allowing flags between positional arguments
// as porchctl does. It returns the positional arguments and, separately,
// those after a "--". -h and --help print the usage and return errHelp.
func (c *cmdEnv) parse(fs *flag.FlagSet, spec cmdSpec, args []string) (pos, rest []string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printCommandUsage(fs, spec)
				return nil, nil, errHelp
			}
			return nil, nil, usagef("%s", flagErrorText(err))
		}
		n := len(args) - len(fs.Args())
		if n > 0 && args[n-1] == "--" {
			return pos, fs.Args(), nil
		}
		left := fs.Args()
		if len(left) == 0 {
			return pos, nil, nil
		}
		pos = append(pos, left[0])
		args = left[1:]
	}
}

func (c *cmdEnv) printCommandUsage(fs *flag.FlagSet, spec cmdSpec) {
	w := c.stdout
	fmt.Fprintf(w, "%s\n\nUsage:\n  cadctl %s %s [flags]\n", spec.short, strings.Fields(c.path)[0], spec.use)
	if spec.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(spec.long))
	}
	fmt.Fprintf(w, "\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// flagErrorText turns the flag package's error into porchctl's wording for
// the common case of an unknown flag.
func flagErrorText(err error) string {
	s := err.Error()
	if rest, ok := strings.CutPrefix(s, "flag provided but not defined: "); ok {
		if !strings.HasPrefix(rest, "--") && len(rest) > 2 {
			rest = "-" + rest
		}
		return "unknown flag: " + rest
	}
	return s
}

// close releases what the invocation opened.
func (c *cmdEnv) close() {
	if c.wasm != nil {
		_ = c.wasm.Close(context.Background())
	}
}

// getenv looks a variable up in the invocation's environment.
func (c *cmdEnv) getenv(key string) string {
	for i := len(c.env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(c.env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// abs resolves a path against the working directory.
func (c *cmdEnv) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// namespace returns the namespace the command works in.
func (c *cmdEnv) namespace() string {
	if c.global.namespace != "" {
		return c.global.namespace
	}
	if c.global.kubeconfig != "" {
		if ns := kubeconfigNamespace(c.abs(c.global.kubeconfig)); ns != "" {
			return ns
		}
	}
	if ns := c.getenv(EnvNamespace); ns != "" {
		return ns
	}
	return DefaultNamespace
}

// client returns the client of the mode chosen by the global flags, opening
// it on first use.
func (c *cmdEnv) client() (Client, error) {
	if c.cl != nil {
		return c.cl, nil
	}
	server := c.global.server
	if server == "" && c.global.kubeconfig == "" {
		server = c.getenv(EnvServer)
	}
	var err error
	if c.global.kubeconfig != "" {
		if c.global.config != "" || server != "" {
			return nil, usagef("--kubeconfig cannot be used with --config or --server")
		}
		var sc *ServerClient
		sc, err = NewClusterClient(c.abs(c.global.kubeconfig), c.namespace())
		if err == nil {
			c.cl = sc
		}
	} else if server != "" {
		if c.global.config != "" {
			return nil, usagef("--config and --server cannot be used together")
		}
		token := c.global.token
		if token == "" {
			token = c.getenv(EnvToken)
		}
		abs := func(p string) string {
			if p == "" {
				return ""
			}
			return c.abs(p)
		}
		var sc *ServerClient
		sc, err = NewServerClient(server, c.namespace(), &ServerOptions{
			Token: token, CAFile: abs(c.global.caFile), CertFile: abs(c.global.certFile), KeyFile: abs(c.global.keyFile)})
		if err == nil {
			c.cl = sc // never a typed nil
		}
	} else {
		var path string
		path, err = c.configPath()
		if err != nil {
			return nil, err
		}
		c.cl, err = NewDirectClient(path, c.namespace(), nil)
	}
	if err != nil {
		return nil, err
	}
	return c.cl, nil
}

// configPath returns the direct-mode configuration file.
func (c *cmdEnv) configPath() (string, error) {
	if c.global.config != "" {
		return c.abs(c.global.config), nil
	}
	if p := c.getenv(EnvConfig); p != "" {
		return c.abs(p), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the user configuration directory (use --config): %w", err)
	}
	return filepath.Join(dir, "cadctl", "config.json"), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
