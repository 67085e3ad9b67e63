package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/configasdata/cad/repository"
)

func obj(ns, name, spec string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "x/v1", "kind": "X",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"v": spec},
	}}
}

func TestCRUDAndReload(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Create("xs", obj("ns", "a", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if a.GetUID() == "" || a.GetResourceVersion() != "1" || a.GetGeneration() != 1 || a.GetCreationTimestamp().Time.IsZero() {
		t.Fatalf("created %v", a.Object)
	}
	if _, err := s.Create("xs", obj("ns", "a", "1")); !errors.Is(err, ErrAlreadyExists) {
		t.Errorf("create twice: %v", err)
	}
	if _, err := s.Create("xs", obj("ns", "Bad_Name", "1")); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
	upd := a.DeepCopy()
	upd.Object["spec"] = map[string]any{"v": "2"}
	b, err := s.Update("xs", upd)
	if err != nil || b.GetGeneration() != 2 || b.GetResourceVersion() != "2" || b.GetUID() != a.GetUID() {
		t.Fatalf("update: %v %v", err, b)
	}
	if _, err := s.Update("xs", upd); !errors.Is(err, ErrConflict) {
		t.Errorf("stale update: %v", err)
	}
	same := b.DeepCopy()
	if c, err := s.Update("xs", same); err != nil || c.GetResourceVersion() != "2" {
		t.Errorf("no-op update: %v %v", err, c)
	}
	labels := b.DeepCopy()
	labels.SetLabels(map[string]string{"k": "v"})
	if c, err := s.Update("xs", labels); err != nil || c.GetGeneration() != 2 {
		t.Errorf("metadata update bumped generation: %v %v", err, c)
	}
	s.Create("xs", obj("other", "z", "1"))
	if l, _ := s.List("xs", "*"); len(l) != 2 || l[0].GetNamespace() != "ns" {
		t.Errorf("list: %v", l)
	}
	// A torn temporary file of an interrupted write is removed on open.
	os.WriteFile(filepath.Join(dir, "xs", "ns", ".tmp-123"), []byte("{"), 0o644)

	s2, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s2.Get("xs", "ns", "a")
	if err != nil || got.GetLabels()["k"] != "v" || got.GetUID() != a.GetUID() {
		t.Fatalf("after reload: %v %v", err, got)
	}
	if _, err := os.Stat(filepath.Join(dir, "xs", "ns", ".tmp-123")); !os.IsNotExist(err) {
		t.Errorf("temporary file kept: %v", err)
	}
	if _, err := s2.Delete("xs", "ns", "a", "1"); !errors.Is(err, ErrConflict) {
		t.Errorf("delete with stale version: %v", err)
	}
	if _, err := s2.Delete("xs", "ns", "a", ""); err != nil {
		t.Fatal(err)
	}
	rv := s2.ResourceVersion()
	s3, _ := Open(dir, nil)
	if _, err := s3.Get("xs", "ns", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted object came back: %v", err)
	}
	if s3.ResourceVersion() != rv {
		t.Errorf("resourceVersion went from %s to %s over a restart", rv, s3.ResourceVersion())
	}
}

func TestWatch(t *testing.T) {
	s, _ := Open(t.TempDir(), &Options{LogSize: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, _ := s.Create("xs", obj("ns", "a", "1"))
	ch, err := s.Watch(ctx, "xs", "")
	if err != nil {
		t.Fatal(err)
	}
	s.Create("ys", obj("ns", "y", "1"))
	upd := a.DeepCopy()
	upd.Object["spec"] = map[string]any{"v": "2"}
	s.Update("xs", upd)
	s.Delete("xs", "ns", "a", "")
	for _, want := range []EventType{Modified, Deleted} {
		select {
		case ev := <-ch:
			if ev.Type != want || ev.Object.GetName() != "a" {
				t.Fatalf("event %s %s, want %s", ev.Type, ev.Object.GetName(), want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
	}
	// Resume from the first write: the logged changes after it.
	ch2, err := s.Watch(ctx, "xs", a.GetResourceVersion())
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch2; ev.Type != Modified {
		t.Errorf("resumed watch: %s", ev.Type)
	}
	// Older than the log: gone.
	for i := 0; i < 5; i++ {
		s.Create("xs", obj("ns", "n"+string(rune('a'+i)), "1"))
	}
	if _, err := s.Watch(ctx, "xs", "1"); !errors.Is(err, ErrGone) {
		t.Errorf("watch from an old version: %v", err)
	}
	if _, err := s.Watch(ctx, "xs", "x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("watch from a bad version: %v", err)
	}
	cancel()
	if _, ok := <-ch; ok {
		// drain what remains until closed
		for range ch {
		}
	}
}

// TestNotFoundIsRepositorysSentinel: Get, Update and Delete of a missing
// object return a *NotFoundError naming it, matching
// repository.ErrNotFound, and change nothing.
func TestNotFoundIsRepositorysSentinel(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "X",
		"metadata": map[string]any{"namespace": "ns", "name": "a"}}}
	_, gerr := s.Get("xs", "ns", "a")
	_, uerr := s.Update("xs", u)
	_, derr := s.Delete("xs", "ns", "a", "")
	for _, err := range []error{gerr, uerr, derr} {
		var nf *NotFoundError
		if !errors.Is(err, repository.ErrNotFound) || !errors.As(err, &nf) || *nf != (NotFoundError{"xs", "ns", "a"}) {
			t.Errorf("%v (%T): want a *NotFoundError{xs ns a} matching repository.ErrNotFound", err, err)
		}
		if err.Error() != `xs "a": not found` {
			t.Errorf("message %q", err)
		}
	}
	if objs, _ := s.List("xs", "ns"); len(objs) != 0 {
		t.Errorf("the store holds %d objects", len(objs))
	}
}
