package revision

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
)

const infoKptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: p
upstream:
  type: git
  git:
    repo: https://example.com/r.git
    directory: /p
    ref: main
upstreamLock:
  type: git
  git:
    repo: https://example.com/r.git
    directory: /p
    ref: main
    commit: abc
info:
  readinessGates:
    - conditionType: Ready
status:
  conditions:
    - type: Ready
      status: "True"
`

func TestInfoFromFiles(t *testing.T) {
	info, err := InfoFromFiles(MustFiles(map[string]string{"Kptfile": infoKptfile, "sub/Kptfile": "garbage: ["}))
	if err != nil {
		t.Fatal(err)
	}
	want := Info{
		Upstream:       &Upstream{Type: GitOrigin, Git: &Git{Repo: "https://example.com/r.git", Directory: "/p", Ref: "main"}},
		UpstreamLock:   &UpstreamLock{Type: GitOrigin, Git: &GitLock{Repo: "https://example.com/r.git", Directory: "/p", Ref: "main", Commit: "abc"}},
		ReadinessGates: []ReadinessGate{{ConditionType: "Ready"}},
		Conditions:     []Condition{{Type: "Ready", Status: ConditionTrue}},
	}
	if !reflect.DeepEqual(info, want) {
		t.Errorf("InfoFromFiles = %+v, want %+v", info, want)
	}

	info, err = InfoFromFiles(MustFiles(map[string]string{"a.yaml": "kind: X\n", "sub/Kptfile": infoKptfile}))
	if err != nil || !reflect.DeepEqual(info, Info{}) {
		t.Errorf("without a root Kptfile: %+v, %v", info, err)
	}
	if info, err := InfoFromFiles(Files{}); err != nil || !reflect.DeepEqual(info, Info{}) {
		t.Errorf("zero Files: %+v, %v", info, err)
	}
	if info, err := InfoFromFiles(MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\n"})); err != nil || !reflect.DeepEqual(info, Info{}) {
		t.Errorf("bare Kptfile: %+v, %v", info, err)
	}
	_, err = InfoFromFiles(MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1alpha2\nkind: Kptfile\n"}))
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("old Kptfile: error %v, want ErrInvalid", err)
	}
}

func testMeta() Meta {
	return Meta{Key: Key{Repository: "r", Package: "p", Workspace: "ws"}, Lifecycle: LifecycleDraft, Version: "v1"}
}

func TestNewIsLazy(t *testing.T) {
	files := MustFiles(map[string]string{"Kptfile": infoKptfile})
	var calls atomic.Int32
	pr := New(testMeta(), func(ctx context.Context) (Files, error) {
		calls.Add(1)
		return files, nil
	})
	if !pr.Meta().Equal(testMeta()) {
		t.Errorf("Meta = %+v", pr.Meta())
	}
	if calls.Load() != 0 {
		t.Fatal("New called the loader")
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := pr.Files(ctx)
			if err != nil || !got.Equal(files) {
				t.Errorf("Files = %v, %v", got.Paths(), err)
			}
			if info, err := pr.Info(ctx); err != nil || info.UpstreamLock.Git.Commit != "abc" {
				t.Errorf("Info = %+v, %v", info, err)
			}
		}()
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("loader called %d times, want once", n)
	}
}

func TestNewRetriesFailedLoad(t *testing.T) {
	boom := errors.New("boom")
	files := MustFiles(map[string]string{"a": "x"})
	calls := 0
	pr := New(testMeta(), func(ctx context.Context) (Files, error) {
		calls++
		if calls == 1 {
			return Files{}, boom
		}
		return files, nil
	})
	ctx := context.Background()
	_, err := pr.Files(ctx)
	if !errors.Is(err, boom) {
		t.Fatalf("first Files error %v, want it to wrap the loader's", err)
	}
	got, err := pr.Files(ctx)
	if err != nil || !got.Equal(files) {
		t.Fatalf("retry: %v, %v", got.Paths(), err)
	}
	if _, err := pr.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("loader called %d times, want 2", calls)
	}
}

func TestNewHonoursContext(t *testing.T) {
	called := false
	pr := New(testMeta(), func(ctx context.Context) (Files, error) {
		called = true
		return Files{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pr.Files(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Files with a cancelled context: %v", err)
	}
	if _, err := pr.Info(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Info with a cancelled context: %v", err)
	}
	if called {
		t.Error("loader called with a cancelled context")
	}
}

func TestNewInfoBadKptfile(t *testing.T) {
	pr := NewWithFiles(testMeta(), MustFiles(map[string]string{"Kptfile": "kind: Kptfile\napiVersion: kpt.dev/v1\nbogus: 1\n"}))
	_, err := pr.Info(context.Background())
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Info error %v, want ErrInvalid", err)
	}
}

func TestNewWithFiles(t *testing.T) {
	files := MustFiles(map[string]string{"a": "x"})
	pr := NewWithFiles(testMeta(), files)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := pr.Files(ctx)
	if err != nil || !got.Equal(files) {
		t.Errorf("Files = %v, %v", got.Paths(), err)
	}
	info, err := pr.Info(ctx)
	if err != nil || !reflect.DeepEqual(info, Info{}) {
		t.Errorf("Info = %+v, %v", info, err)
	}
}

func TestNewDraftOverlay(t *testing.T) {
	base := MustFiles(map[string]string{"Kptfile": infoKptfile, "a.yaml": "a", "dir/b.yaml": "b", "dir/c.yaml": "c"})
	baseCopy := base.Strings()
	meta := testMeta()

	var commits []Files
	var bases []Meta
	commit := func(ctx context.Context, b Meta, files Files, opts CommitOptions) (PackageRevision, error) {
		if opts.Message == "fail" {
			return nil, errors.New("conflict")
		}
		commits = append(commits, files)
		bases = append(bases, b)
		m := b
		m.Version = b.Version + "+"
		return NewWithFiles(m, files), nil
	}
	d := NewDraft(meta, base, commit)
	if d.Key() != meta.Key || !d.Base().Equal(meta) || !d.Files().Equal(base) {
		t.Fatalf("new draft: %v %v %v", d.Key(), d.Base(), d.Files().Paths())
	}

	if err := d.SetFile("a.yaml", []byte("a2")); err != nil {
		t.Fatal(err)
	}
	if err := d.SetFile("new/x.yaml", []byte("x")); err != nil {
		t.Fatal(err)
	}
	d.RemoveFile("dir")
	d.RemoveFile("missing")
	for _, p := range []string{"../x", "a.yaml/y", "new"} {
		if err := d.SetFile(p, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetFile(%q) = %v, want ErrInvalid", p, err)
		}
	}
	want := map[string]string{"Kptfile": infoKptfile, "a.yaml": "a2", "new/x.yaml": "x"}
	if got := d.Files().Strings(); !reflect.DeepEqual(got, want) {
		t.Errorf("overlay = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(base.Strings(), baseCopy) {
		t.Error("draft changes leaked into its base Files")
	}
	if len(commits) != 0 {
		t.Error("changes were written before Commit")
	}

	// A failed commit changes nothing.
	if _, err := d.Commit(context.Background(), CommitOptions{Message: "fail"}); err == nil {
		t.Fatal("Commit succeeded, want the commit function's error")
	}
	if !d.Base().Equal(meta) || !reflect.DeepEqual(d.Files().Strings(), want) {
		t.Error("failed commit changed the draft")
	}

	pr, err := d.Commit(context.Background(), CommitOptions{Message: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if len(commits) != 1 || !reflect.DeepEqual(commits[0].Strings(), want) || !bases[0].Equal(meta) {
		t.Errorf("commit got %v at base %v", commits, bases)
	}
	if !d.Base().Equal(pr.Meta()) || d.Base().Version != "v1+" {
		t.Errorf("Base after commit = %v, want %v", d.Base(), pr.Meta())
	}

	d.SetFiles(MustFiles(map[string]string{"only": "1"}))
	if _, err := d.Commit(context.Background(), CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(commits) != 2 || commits[1].Len() != 1 || bases[1].Version != "v1+" {
		t.Errorf("second commit got %v at base %v", commits[1].Paths(), bases[1])
	}

	if _, err := NewDraft(meta, base, nil).Commit(context.Background(), CommitOptions{}); err == nil {
		t.Error("Commit without a commit function succeeded")
	}
}

func TestNewWithInfo(t *testing.T) {
	ctx := context.Background()
	loads, infos := 0, 0
	files := MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: x\ninfo:\n  readinessGates:\n    - conditionType: A\n"})
	pr := NewWithInfo(testMeta(), func(context.Context) (Files, error) { loads++; return files, nil },
		func(context.Context) (Info, error) {
			infos++
			if infos == 1 {
				return Info{}, errors.New("transient")
			}
			return InfoFromFiles(files)
		})
	if _, err := pr.Info(ctx); err == nil {
		t.Fatal("a failed info load was not returned")
	}
	for range 2 {
		info, err := pr.Info(ctx)
		if err != nil || len(info.ReadinessGates) != 1 {
			t.Fatalf("Info = %+v, %v", info, err)
		}
	}
	if loads != 0 || infos != 2 {
		t.Fatalf("files loaded %d times, info %d times; want 0 and 2 (a failure is not kept, a success is)", loads, infos)
	}
	if _, err := pr.Files(ctx); err != nil || loads != 1 {
		t.Fatalf("Files: %v, loads %d", err, loads)
	}
}
