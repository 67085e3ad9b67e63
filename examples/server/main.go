// Command server is cad's reference server: Porch's API (porch.kpt.dev and
// config.porch.kpt.dev) over HTTP in the Kubernetes API conventions, so that
// kubectl and client-go work against it, over cad's engine.
//
//	go run ./examples/server [--listen 127.0.0.1:7007] [--data-dir ./.cad-server] [flags]
//
// On the first start it creates a local bare git repository under the data
// directory and registers it as Repository "default" in namespace "default".
// Repositories, PackageVariants and PackageVariantSets are kept under the
// data directory and survive a restart; package revisions live in their
// repositories.
//
// Without --token-file and --client-ca-file the server has no
// authentication: it listens on loopback, and refuses a non-loopback
// --listen unless --insecure-allow-unauthenticated is given. Point kubectl
// at it with
//
//	kubectl --server http://127.0.0.1:7007 get packagerevisions
//
// Authentication and authorization:
//
//	--token-file FILE        bearer tokens, kube-apiserver's static token CSV:
//	                         token,user,uid,"group1,group2" (# comments);
//	                         needs TLS: kubectl sends tokens only over HTTPS
//	--tls-cert-file FILE     serve HTTPS with this certificate ...
//	--tls-private-key-file F ... and key
//	--client-ca-file FILE    authenticate TLS client certificates signed by
//	                         these CAs: user = subject CN, groups = subject O
//	--refuse-self-approval   refuse the approval of a revision by a user who
//	                         created, edited or proposed it
//
// A user's roles are its groups named cad:viewer (get, list, watch),
// cad:editor (create and edit drafts, propose, delete drafts, manage
// PackageVariants), cad:approver (approve, reject, propose deletion, delete
// revisions proposed for deletion) and cad:admin (everything, including
// repositories and namespaces). Every role reads. Unauthenticated requests
// get 401, forbidden ones 403, as Kubernetes Status objects.
//
// Repositories, credentials and limits:
//
//	--repository-root DIR    local git repositories (and local or file://
//	                         clone sources) may only be opened under DIR;
//	                         repeatable; default the data directory (its
//	                         git/ directory is always allowed)
//	--secrets-dir DIR        secretRefs resolve to DIR/<namespace>/<name>/,
//	                         one file a key: username and password, or
//	                         bearerToken, or ssh-privatekey (with optional
//	                         ssh-passphrase and known_hosts)
//	--max-body-bytes N       request body cap (default 6 MiB, as Porch)
//	--max-package-files N    files of one package revision resources update
//	                         (default 10000; more is refused with 413)
//	--max-yaml-documents N   YAML documents of one package, all its files
//	                         together, and of one file (default 10000)
//	--max-yaml-nodes N       YAML nodes of one package (aliases expanded),
//	                         all its files together, and of one file
//	                         (default 2,000,000 a package, 1,000,000 a
//	                         file); the bounds of package content and
//	                         YAML request bodies (revision.YAMLLimits;
//	                         negative for none): more is refused with
//	                         400 or 422 before any work that grows with it
//	--max-yaml-alias-nodes N nodes the aliases and merge keys of one YAML
//	                         file may add when expanded (default 100000)
//	--poll DURATION          how often each repository is read for other
//	                         writers' changes; for a remote repository each
//	                         read is a fetch (default 1s, 10s in cluster mode)
//	--maintain-interval D    how long to wait between two maintenance passes
//	                         over the open git repositories (packing small
//	                         packs, loose objects and idle loose refs, as
//	                         git maintenance does; remote mirrors under the
//	                         data directory too); a failure is logged and
//	                         shown in the Repository's MaintenanceFailed
//	                         condition (default 1h; 0 turns the scheduled
//	                         passes off, leaving the maintenance that
//	                         writes run when a repository needs it);
//	                         closed repositories are opened for their run
//	--max-open-repositories N
//	                         repositories kept open while no request uses
//	                         them (an open local git repository holds file
//	                         descriptors); beyond it the least recently
//	                         used are closed and opened again when a
//	                         request or a poll needs them (default 256)
//	--repository-idle-timeout D
//	                         close a repository no request or poll used
//	                         for this long (default 5m; negative: never)
//	--starlark-max-steps N   step cap of the starlark function
//	--starlark-max-memory N  heap growth cap of one starlark run, in bytes
//	--target-kubeconfig FILE the cluster packages are deployed to: serves
//	                         GET packagerevisions/NAME/livestatus, the
//	                         live status of a revision's resources there
//
// URLs with embedded credentials (https://user:pass@host/...) are refused.
//
// Cluster mode: where PackageRevisions are custom resources reconciled by
// the operator (examples/operator), the server is the aggregated API that
// serves porch.kpt.dev/v1alpha1 (PackageRevisionResources, and the
// v1alpha1 view of PackageRevisions) for the same repositories:
//
//	--kubeconfig FILE        the cluster (or --in-cluster in a pod)
//	--requestheader-client-ca-file FILE, --requestheader-allowed-names NAME
//	                         the aggregator's client certificate (default:
//	                         kube-system/extension-apiserver-authentication)
//
// In that mode the Repository objects are the cluster's (mirrored by an
// informer, read-only through the server), secretRefs name the cluster's
// Secrets, every request is authorized by a SubjectAccessReview, and
// the user is the one the aggregator names in X-Remote-User. Without
// --tls-cert-file the server makes a self-signed certificate under the data
// directory. Register it with an APIService for v1alpha1.porch.kpt.dev
// whose Service has the server's address as its endpoint:
// deploy/cluster-mode.yaml has them, with the service account and the
// permissions the server needs (TestClusterMode runs it as that account).
package main

import (
	"bytes"

	"k8s.io/klog/v2"

	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/configasdata/cad/examples/internal/livek8s"
	"github.com/configasdata/cad/examples/internal/repopool"
	"github.com/configasdata/cad/examples/server/internal/apiserver"
	"github.com/configasdata/cad/fnrunner"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/fnruntime/wasmfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

func main() {
	// k8s.io/apiserver logs through klog (process-wide, set once, before
	// any server starts): its warnings and errors go to stderr.
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run parses args and serves until SIGINT or SIGTERM (or ctx is done).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:7007", "address to listen on; without authentication only loopback addresses are accepted")
	dataDir := fs.String("data-dir", ".cad-server", "directory of the server's objects, default repository and caches")
	verbose := fs.Bool("v", false, "log requests that fail and background work")
	tokenFile := fs.String("token-file", "", `bearer tokens: CSV lines token,user,uid,"group1,group2"; groups cad:viewer, cad:editor, cad:approver, cad:admin grant roles`)
	certFile := fs.String("tls-cert-file", "", "serve HTTPS with this PEM certificate (chain)")
	keyFile := fs.String("tls-private-key-file", "", "the PEM private key of --tls-cert-file")
	clientCA := fs.String("client-ca-file", "", "authenticate TLS client certificates signed by these PEM CAs: user from the subject CN, groups from O (needs --tls-cert-file)")
	selfApproval := fs.Bool("refuse-self-approval", false, "refuse the approval of a package revision by a user who created, edited or proposed it (needs authentication)")
	insecure := fs.Bool("insecure-allow-unauthenticated", false, "allow listening on a non-loopback address without authentication: anyone who reaches it can change every repository it serves")
	var roots stringList
	fs.Var(&roots, "repository-root", "directory under which local git repositories and local clone sources may be opened; repeatable (default the data directory)")
	secretsDir := fs.String("secrets-dir", "", "directory of the credentials secretRefs name: <dir>/<namespace>/<secret>/<key> files (username, password, bearerToken, ssh-privatekey, ssh-passphrase, known_hosts)")
	maxBody := fs.Int64("max-body-bytes", apiserver.DefaultMaxBodyBytes, "largest request body accepted, in bytes")
	maxFiles := fs.Int("max-package-files", apiserver.DefaultMaxPackageFiles, "most files a package revision resources update may hold; more is refused with 413 before any work")
	var yl yamlLimitFlags
	fs.IntVar(&yl.documents, "max-yaml-documents", 0, fmt.Sprintf("most YAML documents of one package (all its files together) and of one file; 0 for the default (%d), negative for no bound", revision.DefaultYAMLMaxPackageDocuments))
	fs.IntVar(&yl.nodes, "max-yaml-nodes", 0, fmt.Sprintf("most YAML nodes, aliases expanded, of one package (all its files together) and of one file; 0 for the defaults (%d a package, %d a file), negative for no bound", revision.DefaultYAMLMaxPackageNodes, revision.DefaultYAMLMaxNodes))
	fs.IntVar(&yl.aliasNodes, "max-yaml-alias-nodes", 0, fmt.Sprintf("most YAML nodes the aliases and merge keys of one file may add when expanded; 0 for the default (%d), negative for no bound", revision.DefaultYAMLMaxAliasNodes))
	listCache := fs.Int64("list-cache-bytes", apiserver.DefaultListCacheBytes, "memory of the cache of recent PackageRevision list responses, in bytes; negative turns it off")
	compressLists := fs.Bool("compress-lists", false, "send PackageRevision lists of 128 KiB or more gzip-compressed to clients that accept it (for clients over slow links; on loopback it costs more CPU than it saves)")
	starlarkSteps := fs.Uint64("starlark-max-steps", fnruntime.DefaultStarlarkSteps, "computation steps a starlark function may take")
	var cc clusterConfig
	fs.StringVar(&cc.kubeconfig, "kubeconfig", "", "cluster mode: serve as the aggregated porch.kpt.dev/v1alpha1 API of the cluster this kubeconfig reaches (Repositories, Secrets and authorization are the cluster's)")
	fs.BoolVar(&cc.inCluster, "in-cluster", false, "cluster mode with the pod's service account instead of --kubeconfig")
	fs.StringVar(&cc.requestHeaderCA, "requestheader-client-ca-file", "", "cluster mode: the CA of the aggregator's client certificate (default: read from kube-system/extension-apiserver-authentication)")
	var rhNames stringList
	fs.Var(&rhNames, "requestheader-allowed-names", "cluster mode: common names the aggregator's client certificate may have; repeatable (default: the cluster's)")
	targetKubeconfig := fs.String("target-kubeconfig", "", "serve packagerevisions/NAME/livestatus: the status of a revision's resources in the cluster of this kubeconfig")
	functionRunner := fs.String("function-runner", "", "evaluate the function images cad does not build in on this function runner (Porch's, over its function-evaluator gRPC protocol): grpc://host:port, or grpcs://host:port for TLS")
	functionRunnerCA := fs.String("function-runner-ca-file", "", "PEM CAs that a grpcs:// --function-runner's certificate is checked against (default the system's)")
	starlarkMemory := fs.Int64("starlark-max-memory", fnruntime.DefaultStarlarkMemory, "bytes by which the heap may grow during one starlark run; negative for no cap")
	poll := fs.Duration("poll", 0, fmt.Sprintf("how often each repository is read for changes made by other writers (watches, lists); a remote repository is fetched by the first read after half of it has passed since its last fetch (default %s, %s in cluster mode)",
		apiserver.DefaultGitPollInterval, clusterPollInterval))
	maintain := fs.Duration("maintain-interval", apiserver.DefaultMaintainInterval, "time between two maintenance passes over the open git repositories (packing small packs, loose objects and idle loose refs, as git maintenance does); 0 turns the scheduled passes off, leaving the maintenance that writes run by themselves")
	webhookSecretFile := fs.String("webhook-secret-file", "", "serve POST "+apiserver.WebhookPath+": a git server's push webhook (GitHub, Gitea, Forgejo, GitLab, Bitbucket) signed with the secret in this file makes the registered git repositories it names be read at once, so that --poll can be long")
	allowWasm := fs.Bool("allow-alpha-wasm", false, "run the function images cad does not build in as WebAssembly in-process when they are kpt wasm images (fnruntime/wasmfn: no file system or network, memory and time bounded), before --function-runner")
	maxOpen := fs.Int("max-open-repositories", repopool.DefaultMaxOpen, "repositories kept open while no request uses them (a local git repository holds 2 file descriptors); beyond it the least recently used are closed and opened again when a request or a poll needs them (OCI and in-memory git repositories stay open)")
	idleTimeout := fs.Duration("repository-idle-timeout", repopool.DefaultIdleTimeout, "close a repository no request or poll used for this long (negative: never)")
	retryHeld := fs.Duration("variant-retry-held", 0, "how long a PackageVariant or PackageVariantSet held by a sync that a bound refused or found invalid (status Stalled, reason LimitExceeded or InvalidSpec) stays skipped before one more sync is tried; 0 (the default) syncs it again only when its spec changes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	opts := &apiserver.Options{
		DataDir:            *dataDir,
		RefuseSelfApproval: *selfApproval,
		RepositoryRoots:    roots,
		SecretsDir:         *secretsDir,
		MaxBodyBytes:       *maxBody,
		MaxPackageFiles:    *maxFiles,
		ListCacheBytes:     *listCache,
		CompressLists:      *compressLists,
		YAMLLimits:         yl.limits(),
		VariantRetryHeld:   *retryHeld,
		MaintainInterval:   maintainInterval(*maintain),

		MaxOpenRepositories:   *maxOpen,
		RepositoryIdleTimeout: *idleTimeout,
	}
	fnOpts := &fnruntime.Options{StarlarkMaxSteps: *starlarkSteps, StarlarkMaxMemory: *starlarkMemory}
	if *allowWasm {
		wr, err := wasmfn.New(ctx, &wasmfn.Options{CacheDir: filepath.Join(*dataDir, "cache", "wasm")})
		if err != nil {
			return fmt.Errorf("--allow-alpha-wasm: %w", err)
		}
		defer wr.Close(context.WithoutCancel(ctx))
		fnOpts.Wasm = wr
	}
	var resolver pipeline.Resolver = fnruntime.NewRegistry(fnOpts)
	if *functionRunner != "" {
		rc, err := fnrunner.New(*functionRunner, &fnrunner.Options{CAFile: *functionRunnerCA})
		if err != nil {
			return fmt.Errorf("--function-runner: %w", err)
		}
		defer rc.Close()
		resolver = rc.Resolver(resolver)
	}
	opts.Pipeline = stdfn.Kptfile(resolver, &pipeline.Options{YAMLLimits: opts.YAMLLimits})
	if *targetKubeconfig != "" {
		r, err := livek8s.FromKubeconfig(*targetKubeconfig)
		if err != nil {
			return fmt.Errorf("--target-kubeconfig: %w", err)
		}
		opts.LiveCluster = r
	}
	if *webhookSecretFile != "" {
		secret, err := os.ReadFile(*webhookSecretFile)
		if err != nil {
			return fmt.Errorf("--webhook-secret-file: %w", err)
		}
		if opts.WebhookSecret = bytes.TrimSpace(secret); len(opts.WebhookSecret) == 0 {
			return fmt.Errorf("--webhook-secret-file %s: the file is empty", *webhookSecretFile)
		}
	}
	cc.requestHeaderName = rhNames
	opts.GitPollInterval = pollInterval(*poll, cc.enabled())
	var kube *cluster
	if cc.enabled() {
		var err error
		if kube, err = connect(cc); err != nil {
			return err
		}
		if err := kube.configure(ctx, cc, opts); err != nil {
			return err
		}
		if *certFile == "" && *keyFile == "" {
			host, _, _ := net.SplitHostPort(*listen)
			if *certFile, *keyFile, err = selfSignedTLS(filepath.Join(*dataDir, "tls"), []string{host, "localhost", "127.0.0.1"}); err != nil {
				return fmt.Errorf("cluster mode: serving certificate: %w", err)
			}
		}
	}
	if *tokenFile != "" {
		tokens, err := apiserver.LoadTokenFile(*tokenFile)
		if err != nil {
			return err
		}
		opts.Tokens = tokens
	}
	tlsConfig, err := serverTLS(*certFile, *keyFile, *clientCA)
	if err != nil {
		return err
	}
	if opts.Tokens != nil && tlsConfig == nil {
		// kubectl (client-go) does not send a bearer token over plain HTTP.
		return errors.New("--token-file needs --tls-cert-file and --tls-private-key-file: bearer tokens are only sent over HTTPS")
	}
	opts.ClientCertificates = *clientCA != ""
	if kube != nil {
		// The aggregator presents a client certificate of the request
		// header CA; it must pass the handshake.
		if tlsConfig.ClientCAs == nil {
			tlsConfig.ClientAuth = tls.RequestClientCert // verified by RequestHeader
		} else {
			tlsConfig.ClientCAs.AppendCertsFromPEM(kube.requestHeaderPEM)
		}
	}
	authenticated := opts.Tokens != nil || opts.ClientCertificates || opts.RequestHeader != nil
	if host, _, err := net.SplitHostPort(*listen); err != nil {
		return fmt.Errorf("--listen %q: %w", *listen, err)
	} else if !isLoopback(host) && !authenticated && !*insecure {
		return fmt.Errorf("refusing to listen on %s without authentication: give --token-file or --client-ca-file, listen on loopback, or pass --insecure-allow-unauthenticated", *listen)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var logger *slog.Logger
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	opts.Logger = logger
	srv, err := apiserver.New(ctx, opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	if kube != nil {
		go func() {
			if err := kube.watchRepositories(ctx, srv, func(f string, a ...any) { logger.Warn(fmt.Sprintf(f, a...)) }); err != nil && ctx.Err() == nil {
				logger.Error("mirroring the cluster's repositories", "err", err)
			}
		}()
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      5 * time.Minute, // watches lift it for themselves
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		TLSConfig:         tlsConfig,
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	fmt.Fprintf(stdout, "cad reference server listening on %s://%s (data in %s)\n", scheme, ln.Addr(), *dataDir)
	switch {
	case !authenticated:
		fmt.Fprintln(stdout, "no authentication: anyone who can reach this address can change every repository it serves")
	}
	if !isLoopback(host) && !authenticated {
		fmt.Fprintln(stdout, "WARNING: listening on a non-loopback address without authentication")
	}
	fmt.Fprintf(stdout, "try: kubectl --server %s://%s get packagerevisions\n", scheme, ln.Addr())

	runCtx, cancelRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- srv.Run(runCtx) }()
	serveDone := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			serveDone <- hs.ServeTLS(ln, "", "")
			return
		}
		serveDone <- hs.Serve(ln)
	}()

	select {
	case <-ctx.Done():
	case err = <-serveDone:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cancelRun() // ends watches' feeds so that Shutdown does not wait for them
	if serr := hs.Shutdown(shutdownCtx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		hs.Close()
	}
	<-runDone
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(stdout, "server stopped")
	return nil
}

// clusterPollInterval is the default of --poll in cluster mode, where the
// registered repositories are mostly remote and each poll is a fetch.
const clusterPollInterval = 10 * time.Second

// pollInterval is the poll interval of the server: flag when set, else
// clusterPollInterval in cluster mode and apiserver's default otherwise.
func pollInterval(flag time.Duration, cluster bool) time.Duration {
	switch {
	case flag > 0:
		return flag
	case cluster:
		return clusterPollInterval
	default:
		return apiserver.DefaultGitPollInterval
	}
}

// maintainInterval is apiserver.Options.MaintainInterval for the value of
// --maintain-interval: 0 (or negative) turns the scheduled maintenance
// off.
func maintainInterval(flag time.Duration) time.Duration {
	if flag <= 0 {
		return -1
	}
	return flag
}

// yamlLimitFlags are the values of --max-yaml-documents, --max-yaml-nodes
// and --max-yaml-alias-nodes: 0 for revision's default, negative for no
// bound.
type yamlLimitFlags struct {
	documents, nodes, aliasNodes int
}

// limits returns the revision.YAMLLimits the flags give: documents bounds
// a package's documents and a file's, nodes a package's nodes and a
// file's, aliasNodes a file's alias nodes; the other bounds keep their
// defaults. It returns nil (all defaults) when no flag is set.
func (f yamlLimitFlags) limits() *revision.YAMLLimits {
	if f == (yamlLimitFlags{}) {
		return nil
	}
	return &revision.YAMLLimits{
		MaxDocuments: f.documents, MaxPackageDocuments: f.documents,
		MaxNodes: f.nodes, MaxPackageNodes: f.nodes,
		MaxAliasNodes: f.aliasNodes,
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// isLoopback reports whether a listen host is a loopback address or
// localhost.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serverTLS builds the TLS configuration of the flags: nil without a
// certificate. With client CAs, client certificates are verified when
// given (a request without one may still use a bearer token).
func serverTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		if clientCAFile != "" {
			return nil, errors.New("--client-ca-file needs --tls-cert-file and --tls-private-key-file")
		}
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA %s holds no PEM certificate", clientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}
