package ocirepo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

const childEnv = "OCIREPO_TEST_CHILD"

func TestMultiProcessInProcessRegistry(t *testing.T) { testMultiProcess(t, inProcessRegistry(t)) }
func TestMultiProcessDistribution(t *testing.T)      { testMultiProcess(t, startDistribution(t).host) }

// testMultiProcess races approvals of one package from several OS
// processes (this test binary, re-executed), half of them reading tag
// lists in pages of 3, so that the package lock is contended across
// processes through the registry alone: every number is handed out once
// and no lock is left.
func testMultiProcess(t *testing.T, host string) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const procs, perProc = 4, 4
	prefix := uniquePrefix()
	spec := ociSpec(host + "/" + prefix)
	r := mustOpen(t, spec, nil)
	ctx := context.Background()
	for i := range procs * perProc {
		k := revision.Key{Package: "race", Workspace: fmt.Sprintf("ws%d", i)}
		d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"Kptfile": "k", "i.yaml": fmt.Sprintf("i: %d\n", i)})})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	for p := range procs {
		var wss []string
		for i := p; i < procs*perProc; i += procs {
			wss = append(wss, fmt.Sprintf("ws%d", i))
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestMultiProcessChild$", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%s", childEnv, host+"/"+prefix, p%2*3, strings.Join(wss, ",")))
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
	for p := range procs {
		if errs[p] != nil {
			t.Fatalf("child %d: %v\n%s", p, errs[p], outs[p].String())
		}
		sc := bufio.NewScanner(&outs[p])
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "REV "); ok {
				n, _ := strconv.Atoi(rest)
				nums = append(nums, n)
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
	w := witness{t: t, base: "http://" + host + "/v2/"}
	vtags := 0
	for _, tag := range w.tags(prefix + "/race") {
		if strings.HasPrefix(tag, lockTagPrefix) {
			t.Fatalf("lock tag %s left behind", tag)
		}
		if kind, _, _ := parseTag(tag); kind == tagPublished {
			vtags++
		}
	}
	if vtags != procs*perProc {
		t.Fatalf("%d v<N> tags, want %d", vtags, procs*perProc)
	}
}

// TestMultiProcessChild is the body of one child process of
// testMultiProcess; it does nothing in a normal run.
func TestMultiProcessChild(t *testing.T) {
	env := os.Getenv(childEnv)
	if env == "" {
		t.Skip("only run as a child of TestMultiProcess*")
	}
	parts := strings.SplitN(env, "|", 3)
	page, _ := strconv.Atoi(parts[1])
	opts := &Options{}
	if page > 0 {
		opts.RemoteOptions = []remote.Option{remote.WithPageSize(page)}
	}
	r := mustOpen(t, ociSpec(parts[0]), opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, ws := range strings.Split(parts[2], ",") {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := revision.Key{Package: "race", Workspace: ws}
			for attempt := 0; ; attempt++ {
				pr, err := r.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{})
				mu.Lock()
				switch {
				case err == nil:
					fmt.Printf("REV %d\n", pr.Meta().Key.Revision)
				case errors.Is(err, repository.ErrConflict) && attempt < 20:
					mu.Unlock()
					continue
				default:
					t.Errorf("approve %s: %v", ws, err)
				}
				mu.Unlock()
				return
			}
		}()
	}
	wg.Wait()
}
