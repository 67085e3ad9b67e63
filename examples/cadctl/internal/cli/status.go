package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/configasdata/cad/examples/internal/livek8s"
	"github.com/configasdata/cad/live"
	"github.com/configasdata/cad/revision"
)

func runStatus(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "status PACKAGE_REVISION_NAME", short: "Show the live status of a package revision's resources in a cluster.", long: `
Reads the package revision's resources (without the Kptfile and local-config
resources) and looks each up in the cluster of --target-kubeconfig (default
the --kubeconfig of cluster mode; in server mode without it, the server
computes the status in its own target cluster), computing its status as
kstatus does: Current, InProgress, Failed, Terminating, NotFound or Unknown.
The package's summary is the worst of them, in the order Failed, NotFound,
Unknown, Terminating, InProgress, Current. With --watch the status is printed again
whenever it changes until the package is Current.`}
	fs := c.newFlagSet("rpkg status")
	target := fs.String("target-kubeconfig", "", "the kubeconfig of the cluster the package is deployed to (default --kubeconfig)")
	defaultNS := fs.String("default-namespace", live.DefaultNamespace, "the namespace of namespaced resources that have none")
	output := fs.String("output", "", "output format: json or yaml (default a table)")
	fs.StringVar(output, "o", "", "shorthand for --output")
	watch := fs.Bool("watch", false, "print the status again on every change until the package is Current")
	fs.BoolVar(watch, "w", false, "shorthand for --watch")
	interval := fs.Duration("interval", 2*time.Second, "with --watch, the time between two polls")
	timeout := fs.Duration("timeout", 0, "with --watch, give up after this long (default never)")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usagef("exactly one PACKAGE_REVISION_NAME is required")
	case *output != "" && *output != "json" && *output != "yaml":
		return usagef("unsupported output format %q (json or yaml)", *output)
	case *interval <= 0:
		return usagef("--interval must be positive")
	case *timeout < 0:
		return usagef("--timeout must not be negative")
	}
	if *target == "" {
		*target = c.global.kubeconfig
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	name := pos[0]
	var compute func(context.Context) (*live.PackageStatus, error)
	if srv, ok := cl.(*ServerClient); ok && *target == "" {
		// Server mode without a target: the server's own target cluster.
		compute = func(ctx context.Context) (*live.PackageStatus, error) {
			return srv.LiveStatus(ctx, name, *defaultNS)
		}
	} else {
		if *target == "" {
			return usagef("--target-kubeconfig is required: the cluster the package is deployed to")
		}
		reader, err := livek8s.FromKubeconfig(c.abs(*target))
		if err != nil {
			return fmt.Errorf("--target-kubeconfig: %w", err)
		}
		prr, err := cl.GetResources(c.ctx, name)
		if err != nil {
			return err
		}
		files, err := revision.FilesFromStrings(prr.Spec.Resources)
		if err != nil {
			return fmt.Errorf("package revision %s: %w", name, err)
		}
		objs, err := live.Objects(files)
		if err != nil {
			return fmt.Errorf("package revision %s: %w", name, err)
		}
		opts := &live.Options{DefaultNamespace: *defaultNS}
		compute = func(ctx context.Context) (*live.PackageStatus, error) {
			return live.Compute(ctx, reader, objs, opts)
		}
	}
	print := func(ps *live.PackageStatus) error {
		ps.Revision = name
		return c.printStatus(ps, *output)
	}
	if !*watch {
		ps, err := compute(c.ctx)
		if err != nil {
			return err
		}
		return print(ps)
	}
	// The timeout cancels rather than sets a deadline: client-go's rate
	// limiter fails early with a deadline it cannot meet, which would
	// read as an error of the cluster.
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	var timedOut atomic.Bool
	if *timeout > 0 {
		t := time.AfterFunc(*timeout, func() { timedOut.Store(true); cancel() })
		defer t.Stop()
	}
	err = live.Poll(ctx, *interval, compute, print)
	if err != nil && timedOut.Load() {
		return fmt.Errorf("package revision %s is not Current after %s", name, *timeout)
	}
	return err
}

// LiveStatus returns the reference server's live status of the package
// revision name (GET packagerevisions/NAME/livestatus), computed in the
// server's target cluster; defaultNS is where namespaced resources without
// a namespace are looked for. A server without a target cluster answers
// 404.
func (s *ServerClient) LiveStatus(ctx context.Context, name, defaultNS string) (*live.PackageStatus, error) {
	var obj struct {
		Status live.PackageStatus `json:"status"`
	}
	if err := s.withQuery(url.Values{"defaultNamespace": {defaultNS}}).do(ctx, http.MethodGet, s.prPath(name, "livestatus"), nil, &obj); err != nil {
		return nil, err
	}
	return &obj.Status, nil
}

// printStatus writes ps as a table of its resources and a summary line, or
// as one JSON or YAML document.
func (c *cmdEnv) printStatus(ps *live.PackageStatus, output string) error {
	switch output {
	case "json":
		b, err := json.MarshalIndent(ps, "", "    ")
		if err != nil {
			return err
		}
		c.stdoutf("%s\n", b)
		return nil
	case "yaml":
		b, err := yaml.Marshal(ps)
		if err != nil {
			return err
		}
		c.stdoutf("---\n%s", b)
		return nil
	}
	var rows [][]string
	for _, r := range ps.Resources {
		ns := r.Namespace
		if ns == "" {
			ns = "-"
		}
		kind := r.Kind
		if group, _, ok := strings.Cut(r.APIVersion, "/"); ok {
			kind += "." + group
		}
		rows = append(rows, []string{kind, ns, r.Name, string(r.Status), r.Message})
	}
	if err := printTable(c.stdout, []string{"KIND", "NAMESPACE", "NAME", "STATUS", "MESSAGE"}, rows, false); err != nil {
		return err
	}
	c.stdoutf("%s: %s (%d resources)\n", ps.Revision, ps.Summary, len(ps.Resources))
	return nil
}

// withQuery returns a copy of s whose requests carry the query q (do
// appends paths to the base URL and keeps its query). Empty values are
// left out.
func (s *ServerClient) withQuery(q url.Values) *ServerClient {
	c := *s
	base := *s.base
	for k, v := range q {
		if len(v) == 0 || len(v) == 1 && v[0] == "" {
			delete(q, k)
		}
	}
	base.RawQuery = q.Encode()
	c.base = &base
	return &c
}
