// Command operator runs cad as a Kubernetes operator: PackageRevisions are
// custom resources (porch.kpt.dev/v1alpha2, the CRD in api/crds) that point
// into git or OCI repositories registered as Repository objects
// (config.porch.kpt.dev/v1alpha1), and the operator reconciles them through
// cad's engine.
//
//	kubectl apply -f api/crds/
//	go run ./examples/operator --kubeconfig ~/.kube/config --namespace default
//
// In a cluster: deploy/operator.yaml has its service account, the
// permissions it needs (checked by TestDeployedPermissions, which runs the
// operator as that account) and a Deployment of two replicas.
//
// What it does:
//
//   - Repository: opens the repository (git through go-git, OCI through
//     go-containerregistry; credentials from the Secret its secretRef names:
//     username and password, or bearerToken), discovers its package
//     revisions and creates a PackageRevision object for each (named
//     <repository>.<package with / as .>.<workspace>, owned by the
//     Repository), and deletes the objects whose revision is gone. It reads
//     the repository again every --poll. A local repository (a path or a
//     file:// URL, in git.repo or in a PackageRevision's cloneFrom.git.repo)
//     is opened only under a --repository-root (repeatable; default none),
//     as the reference server confines them; anything else gets Ready False
//     with the reason.
//
//   - PackageRevision: applies spec.source once (init, cloneFrom, copyFrom,
//     upgrade), moves the revision to spec.lifecycle (propose, approve,
//     reject, propose deletion), writes readiness gates and the conditions
//     set in status.packageConditions of an unpublished revision, and
//     spec.packageMetadata of a draft, into its Kptfile, and reports the
//     repository's view in the status. When the repository changes under a
//     settled object (another client approved it, say), the object's spec
//     follows the repository. Approval
//     waits, with Ready False and reason Pending, until every readiness gate
//     has its condition True in status.packageConditions (set it through
//     the status subresource: kubectl patch --subresource=status).
//
//   - Deletion: a finalizer deletes a draft, a proposal or a revision
//     proposed for deletion from the repository. As in Porch, the object
//     of a Published revision is not deleted until the revision is
//     proposed for deletion: it stays, marked for deletion, with Ready
//     False saying why, and goes (with the revision) once spec.lifecycle
//     is set to DeletionProposed. When the
//     repository refuses the deletion (the revision is another's upstream),
//     the object stays, Terminating, with Ready False and reason
//     DeleteFailed saying why, and a Warning Event; the deletion is
//     retried. A Repository of the namespace that does not open is left out
//     of the upstream check: its failure shows in its own status only.
//
//   - PackageVariant (config.porch.kpt.dev/v1alpha1) and PackageVariantSet
//     (v1alpha2): cad's variant package keeps each downstream a
//     specialised copy of its upstream (variant.Sync, variant.SyncSet),
//     with injection from the cluster's objects; the drafts it writes
//     get their PackageRevision objects from discovery at once. Ownership
//     is in the downstream revisions' metadata in git, so a replica that
//     takes over mid-fan-out resumes from what git holds. A finalizer
//     releases what a variant owns per its deletionPolicy. A set's
//     variants are synced in one pass and are not objects of their own.
//
// Everything that is git state stays in git: delete every PackageRevision
// object and restart the operator, and discovery makes the same objects,
// with the same names and revisions, again.
//
// Function images that cad does not build in run on Porch's function
// runner when --function-runner names it (grpc://host:port, or
// grpcs://host:port with --function-runner-ca-file); without it such a
// step fails, as a pod has no container engine.
//
// The leader maintains the open git repositories (local ones, and the
// clones of remote ones under --cache-dir) every --maintain-interval
// (default 1h; 0 turns it off): small packs, loose objects and idle
// loose refs are packed, as git maintenance does. A failed run is logged
// with the repository's name and shown in the Repository's
// MaintenanceFailed condition until a run succeeds.
//
// Several replicas may run: with --leader-elect (the default) they elect
// one leader through a Lease (--leader-election-id in
// --leader-election-namespace), and only it reconciles. With --shards N
// they share the work instead: each Repository falls in one of N shards
// (a hash of its namespace/name), each shard has a Lease that one
// replica at a time holds, and a replica reconciles only the objects of
// its shards: a Repository and its PackageRevisions by the holder of the
// Repository's shard, a PackageVariant by the holder of its downstream
// repository's shard, a PackageVariantSet by the holder of the shard of
// its own namespace/name. The shards are spread over the live replicas
// by rendezvous hashing, so a replica that joins takes only its share and
// one that dies (its Leases expire after --lease-duration) leaves only
// its own; the new holder queues every object of the shard at once. The
// holder of a shard renews its Lease every --retry-period and stops its
// reconciles when it could not within --renew-deadline, before any other
// replica may take the shard (--lease-duration), as a leader does; a
// replica leaving or giving a shard up waits for the shard's reconciles
// to end first. Metrics are off unless --metrics-bind-address is given.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/configasdata/cad/examples/internal/maintsched"
	"github.com/configasdata/cad/examples/internal/repopool"
	"github.com/configasdata/cad/fnrunner"
	"github.com/configasdata/cad/fnruntime/wasmfn"
)

func main() {
	os.Exit(exitCode(run(context.Background(), os.Args[1:])))
}

// exitCode is the process's exit status after run returned err: 0 for
// success and for -h (the usage was asked for, and printed), 1 otherwise,
// with the error printed.
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(os.Stderr, "operator:", err)
		return 1
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file; default $KUBECONFIG, in-cluster config, or ~/.kube/config")
	var o Options
	fs.StringVar(&o.Namespace, "namespace", "", "watch only this namespace (default all)")
	fs.BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader among the replicas through a Lease (ignored with --shards)")
	fs.IntVar(&o.Shards, "shards", 0, "share the Repositories among the replicas in this many shards, one Lease each (every replica the same number; the spread is a hash's, even with many shards: 32 to 64 suit up to about 10 replicas, each shard costing one Lease write per --retry-period); 0: no sharding, one leader (--leader-elect) does all the work")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "cad-operator", "name of the leader election Lease, or with --shards the prefix of the names of the shards' and replicas' Leases")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease(s) (default --namespace, or default)")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", 15*time.Second, "how long another replica waits, after a Lease (the leader's, a shard's) stopped changing, before it takes it over")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", 10*time.Second, "how long a holder tries to renew its Lease before it stops the work the Lease guards (less than --lease-duration)")
	fs.DurationVar(&o.RetryPeriod, "retry-period", 2*time.Second, "how often Leases are renewed and tried (less than --renew-deadline)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", "0", `serve metrics on this address ("0": off)`)
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "", `serve Go's pprof profiles (/debug/pprof/) on this address (default "": off)`)
	fs.StringVar(&o.CacheDir, "cache-dir", "", "keep clones of remote git repositories here (default in memory)")
	fs.DurationVar(&o.Poll, "poll", 30*time.Second, "how often each repository is read again")
	maintain := fs.Duration("maintain-interval", maintsched.DefaultInterval, "time between two maintenance passes of the leader over the open git repositories (packing small packs, loose objects and idle loose refs, as git maintenance does; local repositories and the clones under --cache-dir); 0 turns the scheduled passes off, leaving the maintenance that writes run by themselves")
	fs.StringVar(&o.WebhookAddr, "webhook-listen", "", `serve POST `+WebhookPath+` on this address (every replica): a git server's push webhook (GitHub, Gitea, Forgejo, GitLab, Bitbucket) signed with --webhook-secret-file's secret makes the Repositories it names be read at once, so that --poll can be long (default "": off)`)
	allowWasm := fs.Bool("allow-alpha-wasm", false, "run the function images cad does not build in as WebAssembly in-process when they are kpt wasm images (fnruntime/wasmfn: no file system or network, memory and time bounded), before --function-runner")
	webhookSecretFile := fs.String("webhook-secret-file", "", "the shared secret of --webhook-listen's push webhooks")
	fs.IntVar(&o.MaxOpenRepositories, "max-open-repositories", repopool.DefaultMaxOpen, "local git repositories (and with --cache-dir remote clones) kept open while unused, each holding 2 file descriptors; beyond it the least recently used are closed and opened again at their next read")
	fs.DurationVar(&o.RepositoryIdleTimeout, "repository-idle-timeout", repopool.DefaultIdleTimeout, "close a repository of --max-open-repositories' kind not used for this long (negative: never)")
	fs.IntVar(&o.Workers, "workers", 4, "objects of each kind reconciled at once")
	fs.Func("repository-root", "directory under which local git repositories (git.repo or cloneFrom.git.repo as a path or file:// URL) may be opened; repeatable (default none: no local repository)", func(v string) error {
		o.RepositoryRoots = append(o.RepositoryRoots, v)
		return nil
	})
	qps := fs.Float64("kube-api-qps", 100, "requests per second to the API server (client-go's default of 5 would make discovering thousands of revisions take many minutes)")
	burst := fs.Int("kube-api-burst", 200, "burst of requests to the API server")
	verbose := fs.Bool("v", false, "log what the reconcilers do: revisions created, moved, deleted and discovered")
	functionRunner := fs.String("function-runner", "", "evaluate the function images cad does not build in on this function runner (Porch's, over its function-evaluator gRPC protocol): grpc://host:port, or grpcs://host:port for TLS")
	functionRunnerCA := fs.String("function-runner-ca-file", "", "PEM CAs that a grpcs:// --function-runner's certificate is checked against (default the system's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.MaintainInterval = *maintain
	if o.MaintainInterval <= 0 {
		o.MaintainInterval = -1 // off
	}
	if *functionRunner != "" {
		rc, err := fnrunner.New(*functionRunner, &fnrunner.Options{CAFile: *functionRunnerCA})
		if err != nil {
			return fmt.Errorf("--function-runner: %w", err)
		}
		defer rc.Close()
		o.FunctionRunner = rc
	}
	if *allowWasm {
		dir := ""
		if o.CacheDir != "" {
			dir = filepath.Join(o.CacheDir, "wasm")
		}
		wr, err := wasmfn.New(ctx, &wasmfn.Options{CacheDir: dir})
		if err != nil {
			return fmt.Errorf("--allow-alpha-wasm: %w", err)
		}
		defer wr.Close(context.WithoutCancel(ctx))
		o.Wasm = wr
	}
	if *webhookSecretFile != "" {
		secret, err := os.ReadFile(*webhookSecretFile)
		if err != nil {
			return fmt.Errorf("--webhook-secret-file: %w", err)
		}
		o.WebhookSecret = bytes.TrimSpace(secret)
	}
	if o.WebhookAddr != "" && len(o.WebhookSecret) == 0 {
		return errors.New("--webhook-listen needs a non-empty --webhook-secret-file")
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: levelNames})))

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if *kubeconfig != "" {
		rules.ExplicitPath = *kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(*qps), *burst
	op, err := newOperator(cfg, o)
	if err != nil {
		return err
	}
	if err := op.addRepositories(); err != nil {
		return err
	}
	if err := op.addPackageRevisions(); err != nil {
		return err
	}
	if err := op.addVariants(); err != nil {
		return err
	}
	if err := op.addMaintenance(); err != nil {
		return err
	}
	if err := op.addWebhook(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return op.mgr.Start(ctx)
}

// levelNames names the levels of logr's verbose lines (V(1) is slog's
// DEBUG+3) DEBUG, as -v users read them.
func levelNames(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.LevelKey && len(groups) == 0 {
		if l, ok := a.Value.Any().(slog.Level); ok && l < slog.LevelInfo {
			return slog.String(slog.LevelKey, "DEBUG")
		}
	}
	return a
}
