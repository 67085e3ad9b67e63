// Command server is cad's reference server: Porch's API (porch.kpt.dev and
// config.porch.kpt.dev) over HTTP in the Kubernetes API conventions, so that
// kubectl and client-go work against it, over cad's engine.
//
//	go run ./examples/server [--listen 127.0.0.1:7007] [--data-dir ./.cad-server]
//
// On the first start it creates a local bare git repository under the data
// directory and registers it as Repository "default" in namespace "default".
// Repositories, PackageVariants and PackageVariantSets are kept under the
// data directory and survive a restart; package revisions live in their
// repositories.
//
// The server has no authentication: it listens on loopback unless told
// otherwise. Point kubectl at it with
//
//	kubectl --server http://127.0.0.1:7007 get packagerevisions
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/configasdata/cad/examples/server/internal/apiserver"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run parses args and serves until SIGINT or SIGTERM (or ctx is done).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:7007", "address to listen on; the server has no authentication, keep it on loopback")
	dataDir := fs.String("data-dir", ".cad-server", "directory of the server's objects, default repository and caches")
	verbose := fs.Bool("v", false, "log requests that fail and background work")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var logger *slog.Logger
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	srv, err := apiserver.New(ctx, &apiserver.Options{DataDir: *dataDir, Logger: logger})
	if err != nil {
		return err
	}
	defer srv.Close()

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
	}
	fmt.Fprintf(stdout, "cad reference server listening on http://%s (data in %s)\n", ln.Addr(), *dataDir)
	fmt.Fprintln(stdout, "no authentication: anyone who can reach this address can change every repository it serves")
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		fmt.Fprintln(stdout, "WARNING: listening on a non-loopback address")
	}
	fmt.Fprintf(stdout, "try: kubectl --server http://%s get packagerevisions\n", ln.Addr())

	runCtx, cancelRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- srv.Run(runCtx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- hs.Serve(ln) }()

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
