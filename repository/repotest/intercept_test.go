package repotest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// The intercepted repository with no hooks is itself a conforming backend.
func TestInterceptPassThroughConforms(t *testing.T) {
	repotest.Run(t, repotest.Harness{
		New: func(t *testing.T) repository.Repository {
			return repotest.Intercept(memrepo.New("test", nil), repotest.Funcs{})
		},
		NoBatch: true, // Intercept offers no batches
	})
}

func TestInterceptInjectsErrors(t *testing.T) {
	ctx := context.Background()
	boom := &repository.Error{Op: "commit", Repository: "test", Err: repository.ErrUnavailable}
	var commits int
	r := repotest.Intercept(memrepo.New("test", nil), repotest.Funcs{
		Commit: func(ctx context.Context, next revision.Draft, opts revision.CommitOptions) (revision.PackageRevision, error) {
			commits++
			if commits == 1 {
				return nil, boom
			}
			return next.Commit(ctx, opts)
		},
		UpdateLifecycle: func(ctx context.Context, next repository.Repository, k revision.Key, to revision.Lifecycle, o repository.UpdateOptions) (revision.PackageRevision, error) {
			if to == revision.LifecyclePublished {
				return nil, &repository.Error{Op: "update lifecycle", Err: repository.ErrConflict}
			}
			return next.UpdateLifecycle(ctx, k, to, o)
		},
	})
	k := revision.Key{Package: "p", Workspace: "ws"}
	d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"a.yaml": "a: 1\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); !errors.Is(err, repository.ErrUnavailable) {
		t.Fatalf("first commit = %v, want the injected error", err)
	}
	if _, err := r.Get(ctx, k); !errors.Is(err, repository.ErrNotFound) {
		t.Fatalf("the injected failure wrote the draft: %v", err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	if _, err := r.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{}); !errors.Is(err, repository.ErrConflict) {
		t.Fatalf("approve = %v, want the injected conflict", err)
	}
	if commits != 2 {
		t.Fatalf("Commit hook ran %d times, want 2", commits)
	}
}

// forgetCreation is a backend that drops revision.CommitOptions.Creation.
func forgetCreation() repository.Repository {
	return repotest.Intercept(memrepo.New("test", nil), repotest.Funcs{
		Commit: func(ctx context.Context, next revision.Draft, opts revision.CommitOptions) (revision.PackageRevision, error) {
			opts.Creation = nil
			return next.Commit(ctx, opts)
		},
	})
}

// TestCreationNotRecordedIsDeclared: a backend that records no creation
// passes the Creation test only when its harness says so (NoCreation).
// Without it the Creation test fails (run in a child process, as a
// failing test cannot be observed from inside).
func TestCreationNotRecordedIsDeclared(t *testing.T) {
	if os.Getenv(envUndeclared) == "1" {
		repotest.Run(t, repotest.Harness{New: func(t *testing.T) repository.Repository { return forgetCreation() }, NoBatch: true})
		return
	}
	repotest.Run(t, repotest.Harness{
		New:        func(t *testing.T) repository.Repository { return forgetCreation() },
		NoCreation: true,
		NoBatch:    true,
	})
	cmd := exec.Command(os.Args[0], "-test.run=^TestCreationNotRecordedIsDeclared$/^Creation$", "-test.v")
	cmd.Env = append(os.Environ(), envUndeclared+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--- FAIL: TestCreationNotRecordedIsDeclared/Creation") {
		t.Fatalf("an undeclared backend without creations did not fail the Creation test (err %v):\n%s", err, out)
	}
}

const envUndeclared = "REPOTEST_CHILD_UNDECLARED_CREATION"

// coreOnly hides every optional interface of the repository it holds.
type coreOnly struct{ repository.Repository }

// TestInterceptCapabilitiesMatchWrapped: an intercepted repository answers
// a type assertion for each optional interface as the wrapped one does
// (MetadataWriter and Adopter also when their hook is set), and its
// optional methods call through.
func TestInterceptCapabilitiesMatchWrapped(t *testing.T) {
	caps := func(r repository.Repository) [5]bool {
		_, w := r.(repository.Watcher)
		_, v := r.(repository.Versioner)
		_, m := r.(repository.MetadataWriter)
		_, a := r.(repository.Adopter)
		_, l := r.(repository.Locator)
		return [5]bool{w, v, m, a, l}
	}
	mem := memrepo.New("r", nil)
	defer mem.Close()
	git, err := gitrepo.Open(context.Background(), repository.Spec{Name: "g", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: "mem://", CreateBranch: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer git.Close()
	for name, r := range map[string]repository.Repository{"memrepo": mem, "gitrepo": git, "core only": coreOnly{mem}} {
		if got, want := caps(repotest.Intercept(r, repotest.Funcs{})), caps(r); got != want {
			t.Errorf("%s: intercepted capabilities %v, wrapped %v", name, got, want)
		}
	}
	if got := caps(repotest.Intercept(coreOnly{mem}, repotest.Funcs{})); got != [5]bool{} {
		t.Errorf("a core-only repository intercepted advertises %v", got)
	}
	hooked := repotest.Intercept(coreOnly{mem}, repotest.Funcs{
		SetMetadata: func(context.Context, repository.Repository, revision.Key, revision.Metadata, repository.UpdateOptions) (revision.PackageRevision, error) {
			return nil, nil
		},
		Adopt: func(context.Context, repository.Repository, revision.Key, repository.AdoptOptions) (revision.PackageRevision, error) {
			return nil, nil
		},
	})
	if got := caps(hooked); got != [5]bool{false, false, true, true, false} {
		t.Errorf("hooks for SetMetadata and Adopt: capabilities %v", got)
	}
	// The optional methods reach the wrapped repository.
	v, err := repotest.Intercept(git, repotest.Funcs{}).(repository.Versioner).Version(context.Background())
	want, werr := git.Version(context.Background())
	if err != nil || werr != nil || v != want {
		t.Errorf("Version through Intercept %q, %v; direct %q, %v", v, err, want, werr)
	}
}
