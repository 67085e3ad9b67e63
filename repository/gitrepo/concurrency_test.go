package gitrepo_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// approve approves k, retrying on ErrConflict as a caller would.
func approve(ctx context.Context, r repository.Repository, k revision.Key) (int, error) {
	for attempt := 0; ; attempt++ {
		pr, err := r.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{})
		if err == nil {
			return pr.Meta().Key.Revision, nil
		}
		if !errors.Is(err, repository.ErrConflict) || attempt >= 100 {
			return 0, err
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
}

func propose(t testing.TB, r repository.Repository, pkg, ws string) {
	t.Helper()
	ctx := context.Background()
	d, err := r.CreateDraft(ctx, revision.Key{Package: pkg, Workspace: ws}, repository.CreateDraftOptions{Files: kptPkg(pkg, map[string]string{"ws.yaml": "ws: " + ws + "\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: pkg, Workspace: ws}, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRaceHandles races approvals and draft creations of one package
// through several handles on one bare repository.
func TestRaceHandles(t *testing.T) {
	t.Run("bare", func(t *testing.T) {
		dir := newBare(t)
		raceHandles(t, dir, dir)
	})
	t.Run("http", func(t *testing.T) {
		dir := newBare(t)
		srv := gitServer(t, filepath.Dir(dir), "", "")
		raceHandles(t, dir, srv.URL+"/"+filepath.Base(dir))
	})
}

func raceHandles(t *testing.T, dir, url string) {
	ctx := context.Background()
	const handles, perHandle = 3, 5
	rs := make([]*gitrepo.Repository, handles)
	for i := range rs {
		rs[i] = mustOpen(t, gitSpec(url), nil)
		defer rs[i].Close()
	}
	for i := range handles * perHandle {
		propose(t, rs[0], "p", fmt.Sprintf("ws%d", i))
	}
	var mu sync.Mutex
	var nums []int
	creates := 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range handles * perHandle {
		wg.Add(2)
		r := rs[i%handles]
		go func() {
			defer wg.Done()
			<-start
			n, err := approve(ctx, r, revision.Key{Package: "p", Workspace: fmt.Sprintf("ws%d", i)})
			if err != nil {
				t.Errorf("approve ws%d: %v", i, err)
				return
			}
			mu.Lock()
			nums = append(nums, n)
			mu.Unlock()
		}()
		go func() {
			defer wg.Done()
			<-start
			d, err := r.CreateDraft(ctx, revision.Key{Package: "p", Workspace: "same"}, repository.CreateDraftOptions{Files: kptPkg("p", nil)})
			if err == nil {
				_, err = d.Commit(ctx, revision.CommitOptions{})
			}
			switch {
			case err == nil:
				mu.Lock()
				creates++
				mu.Unlock()
			case !errors.Is(err, repository.ErrAlreadyExists) && !errors.Is(err, repository.ErrConflict):
				t.Errorf("losing create: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	slices.Sort(nums)
	for i, n := range nums {
		if n != i+1 {
			t.Fatalf("revision numbers %v, want 1..%d once each", nums, handles*perHandle)
		}
	}
	if creates != 1 {
		t.Fatalf("%d creations of one workspace won, want 1", creates)
	}
	tags := git(t, dir, "tag", "--list", "p/*")
	if n := len(strings.Split(tags, "\n")); n != handles*perHandle {
		t.Fatalf("%d tags, want %d:\n%s", n, handles*perHandle, tags)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
}

const childEnv = "GITREPO_TEST_CHILD"

// TestMultiProcess races approvals and draft creations on one bare
// repository from several OS processes (this test binary, re-executed).
func TestMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := newBare(t)
	const procs, perProc = 4, 4
	r := mustOpen(t, gitSpec(dir), nil)
	for i := range procs * perProc {
		propose(t, r, "p", fmt.Sprintf("ws%d", i))
	}
	r.Close()
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	for p := range procs {
		var wss []string
		for i := p; i < procs*perProc; i += procs {
			wss = append(wss, fmt.Sprintf("ws%d", i))
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestMultiProcessChild$", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"="+dir+"|"+strings.Join(wss, ","))
		cmd.Stdout = &outs[p]
		cmd.Stderr = &outs[p]
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = cmd.Run()
		}()
	}
	wg.Wait()
	var nums []int
	creates := 0
	for p := range procs {
		if errs[p] != nil {
			t.Fatalf("child %d: %v\n%s", p, errs[p], outs[p].String())
		}
		sc := bufio.NewScanner(&outs[p])
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "REV "); ok {
				n, _ := strconv.Atoi(rest)
				nums = append(nums, n)
			}
			if line == "CREATED" {
				creates++
			}
		}
	}
	slices.Sort(nums)
	if len(nums) != procs*perProc {
		t.Fatalf("got %d approvals, want %d", len(nums), procs*perProc)
	}
	for i, n := range nums {
		if n != i+1 {
			t.Fatalf("revision numbers %v, want 1..%d once each", nums, procs*perProc)
		}
	}
	if creates != 1 {
		t.Fatalf("%d processes created the same workspace, want 1", creates)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
	if got := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/proposed"); got != "" {
		t.Fatalf("proposals left: %s", got)
	}
}

// TestMultiProcessChild is the body of one child process of
// TestMultiProcess; it does nothing in a normal run.
func TestMultiProcessChild(t *testing.T) {
	env := os.Getenv(childEnv)
	if env == "" {
		t.Skip("only run as a child of TestMultiProcess")
	}
	dir, list, _ := strings.Cut(env, "|")
	ctx := context.Background()
	r := mustOpen(t, gitSpec(dir), nil)
	defer r.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, ws := range strings.Split(list, ",") {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := approve(ctx, r, revision.Key{Package: "p", Workspace: ws})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("approve %s: %v", ws, err)
				return
			}
			fmt.Printf("REV %d\n", n)
		}()
	}
	d, err := r.CreateDraft(ctx, revision.Key{Package: "p", Workspace: "same"}, repository.CreateDraftOptions{Files: kptPkg("p", nil)})
	if err == nil {
		_, err = d.Commit(ctx, revision.CommitOptions{})
	}
	switch {
	case err == nil:
		fmt.Println("CREATED")
	case !errors.Is(err, repository.ErrAlreadyExists) && !errors.Is(err, repository.ErrConflict):
		t.Errorf("losing create: %v", err)
	}
	wg.Wait()
}
