package update

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/configasdata/cad/revision"
)

const kfBase = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: base\n"

func cm(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  key: " + value + "\n"
}

func TestNonKRMFiles(t *testing.T) {
	o := revision.MustFiles(map[string]string{"Kptfile": kfBase, "same.txt": "o", "edited.txt": "o", "gone.txt": "o", "gone-edited.txt": "o", "data.json": "{}"})
	u := revision.MustFiles(map[string]string{"Kptfile": kfBase, "same.txt": "u", "edited.txt": "u", "new.txt": "u", "data.json": "{\"a\":1}"})
	l := revision.MustFiles(map[string]string{"Kptfile": kfBase, "same.txt": "o", "edited.txt": "l", "gone.txt": "o", "gone-edited.txt": "l", "mine.txt": "l", "data.json": "{}"})
	got, err := Merge(o, u, l, revision.ResourceMerge)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Kptfile": kfBase, "same.txt": "u", "edited.txt": "l", "gone-edited.txt": "l", "mine.txt": "l", "new.txt": "u", "data.json": "{\"a\":1}"}
	if g := got.Strings(); !reflect.DeepEqual(g, want) {
		t.Errorf("got %v\nwant %v", g, want)
	}
}

func TestResourceTable(t *testing.T) {
	o := revision.MustFiles(map[string]string{"a.yaml": cm("a", "o"), "del-up.yaml": cm("d", "o"), "del-up-edited.yaml": cm("e", "o"), "del-local.yaml": cm("f", "o")})
	u := revision.MustFiles(map[string]string{"a.yaml": cm("a", "u"), "new.yaml": cm("n", "u"), "del-local.yaml": cm("f", "u")})
	l := revision.MustFiles(map[string]string{"a.yaml": cm("a", "o"), "del-up.yaml": cm("d", "o"), "del-up-edited.yaml": cm("e", "l"), "mine.yaml": cm("m", "l")})
	got, err := Merge(o, u, l, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a.yaml": cm("a", "u"), "new.yaml": cm("n", "u"), "del-up-edited.yaml": cm("e", "l"), "mine.yaml": cm("m", "l")}
	if g := got.Strings(); !reflect.DeepEqual(g, want) {
		t.Errorf("got %v\nwant %v", g, want)
	}
}

func TestDuplicateResources(t *testing.T) {
	dup := revision.MustFiles(map[string]string{"a.yaml": cm("a", "1") + "---\n" + cm("a", "2")})
	if _, err := Merge(revision.Files{}, revision.Files{}, dup, ""); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("err = %v, want duplicate resources", err)
	}
}

func TestFastForward(t *testing.T) {
	withLock := kfBase + "upstreamLock:\n  type: git\n  git:\n    commit: abc\n"
	o := revision.MustFiles(map[string]string{"Kptfile": kfBase, "a.yaml": cm("a", "o")})
	u := revision.MustFiles(map[string]string{"Kptfile": kfBase, "a.yaml": cm("a", "u"), "b.txt": "u"})
	// A Kptfile that differs only in upstreamLock is not a local change.
	l := revision.MustFiles(map[string]string{"Kptfile": withLock, "a.yaml": cm("a", "o")})
	got, err := Merge(o, u, l, revision.FastForward)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := got.Get("a.yaml"); string(a) != cm("a", "u") || !got.Has("b.txt") {
		t.Errorf("got %v", got.Strings())
	}
	l2, _ := l.With("extra.txt", []byte("x"))
	_, err = Merge(o, u, l2, revision.FastForward)
	var lme *LocalModifiedError
	if !errors.Is(err, ErrLocalModified) || !errors.As(err, &lme) || !reflect.DeepEqual(lme.Paths, []string{"extra.txt"}) {
		t.Errorf("err = %v", err)
	}
}

func TestCopyMergeAndReplace(t *testing.T) {
	o := revision.MustFiles(map[string]string{"Kptfile": kfBase, "a.txt": "o", "gone.txt": "o"})
	u := revision.MustFiles(map[string]string{"Kptfile": kfBase, "a.txt": "u", "new.txt": "u"})
	l := revision.MustFiles(map[string]string{"Kptfile": strings.Replace(kfBase, "base", "mine", 1), "a.txt": "l", "gone.txt": "o", "mine.txt": "l"})
	got, err := Merge(o, u, l, revision.CopyMerge)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Kptfile": strings.Replace(kfBase, "base", "mine", 1), "a.txt": "u", "new.txt": "u", "mine.txt": "l"}
	if g := got.Strings(); !reflect.DeepEqual(g, want) {
		t.Errorf("copy-merge got %v\nwant %v", g, want)
	}
	got, err = Merge(o, u, l, revision.ForceDeleteReplace)
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"Kptfile": strings.Replace(kfBase, "base", "mine", 1), "a.txt": "u", "new.txt": "u"}
	if g := got.Strings(); !reflect.DeepEqual(g, want) {
		t.Errorf("force-delete-replace got %v\nwant %v", g, want)
	}
	if _, err := Merge(o, u, l, "bogus"); err == nil {
		t.Error("unknown strategy accepted")
	}
}

func TestMergeKptfile(t *testing.T) {
	parse := func(s string) *revision.Kptfile {
		kf, err := revision.ParseKptfile([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return kf
	}
	o := parse(kfBase + "info:\n  description: o\npipeline:\n  mutators:\n  - image: set-labels:v1\n  - image: drop:v1\n")
	u := parse(kfBase + "info:\n  description: u\npipeline:\n  mutators:\n  - image: set-labels:v2\n  - image: added-up:v1\n")
	l := parse("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: local # the local name\ninfo:\n  description: o\n" +
		"pipeline:\n  mutators:\n  - image: set-labels:v1\n  - image: drop:v1\n  - image: added-local:v1\n")
	m := MergeKptfile(o, u, l)
	var images []string
	for _, f := range m.Pipeline.Mutators {
		images = append(images, f.Image)
	}
	if m.Metadata.Name != "local" || m.Info.Description != "u" ||
		!reflect.DeepEqual(images, []string{"set-labels:v2", "added-local:v1", "added-up:v1"}) {
		t.Errorf("merged %+v, mutators %v", m, images)
	}
	b, err := m.Encode()
	if err != nil || !strings.Contains(string(b), "# the local name") {
		t.Errorf("encode lost local comments: %s (%v)", b, err)
	}
}

func TestSubpackages(t *testing.T) {
	sub := func(dir string) map[string]string {
		return map[string]string{dir + "/Kptfile": strings.Replace(kfBase, "base", dir, 1), dir + "/cm.yaml": cm(dir, "o")}
	}
	join := func(ms ...map[string]string) revision.Files {
		all := map[string]string{"Kptfile": kfBase}
		for _, m := range ms {
			for k, v := range m {
				all[k] = v
			}
		}
		return revision.MustFiles(all)
	}
	edited := sub("keep")
	edited["keep/cm.yaml"] = cm("keep", "l")
	o := join(sub("gone"), sub("keep"), sub("dellocal"))
	u := join(map[string]string{"dellocal/new.txt": "u"})
	l := join(sub("gone"), edited)
	got, err := Merge(o, u, l, revision.ResourceMerge)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Kptfile", "keep/Kptfile", "keep/cm.yaml"}; !reflect.DeepEqual(got.Paths(), want) {
		t.Errorf("paths %v, want %v", got.Paths(), want)
	}
	both := join(sub("twin"))
	if _, err := Merge(join(), both, both, revision.ResourceMerge); err == nil || !strings.Contains(err.Error(), "added in both") {
		t.Errorf("err = %v, want added in both", err)
	}
}

// TestMergeConcurrent checks that merges (CRD schemas included) share no
// state; run with -race.
func TestMergeConcurrent(t *testing.T) {
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: stores.test.group
spec:
  group: test.group
  names:
    kind: Store
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              items:
                type: array
                x-kubernetes-patch-merge-key: name
                x-kubernetes-patch-strategy: merge
                items:
                  type: object
`
	store := func(items ...string) string {
		s := "apiVersion: test.group/v1\nkind: Store\nmetadata:\n  name: s\nspec:\n  items:\n"
		for _, i := range items {
			s += "  - name: " + i + "\n"
		}
		return s
	}
	o := revision.MustFiles(map[string]string{"a.yaml": cm("a", "o"), "crd.yaml": crd, "s.yaml": store("x")})
	u := revision.MustFiles(map[string]string{"a.yaml": cm("a", "u"), "crd.yaml": crd, "s.yaml": store("x", "up")})
	l := revision.MustFiles(map[string]string{"a.yaml": cm("a", "o"), "crd.yaml": crd, "s.yaml": store("x", "local")})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := Merge(o, u, l, revision.ResourceMerge)
			if err != nil {
				t.Error(err)
				return
			}
			// The CRD makes spec.items associative: both additions survive.
			if b, _ := got.Get("s.yaml"); !strings.Contains(string(b), "name: up") || !strings.Contains(string(b), "name: local") {
				t.Errorf("s.yaml:\n%s", b)
			}
		}()
	}
	wg.Wait()
}

// BenchmarkResourceMerge200 merges a package of 200 resources (in 20
// files) where upstream changed every resource and local edited every
// other one.
func BenchmarkResourceMerge200(b *testing.B) {
	o, u, l := map[string]string{}, map[string]string{}, map[string]string{}
	for f := range 20 {
		var os, us, ls []string
		for r := range 10 {
			name := "cm-" + strconv.Itoa(f) + "-" + strconv.Itoa(r)
			os = append(os, cm(name, "o"))
			us = append(us, cm(name, "u")+"  extra: u\n")
			lv := "o"
			if r%2 == 0 {
				lv = "l"
			}
			ls = append(ls, strings.Replace(cm(name, lv), "\ndata:", "\nlocal: x\ndata:", 1))
		}
		p := "f" + strconv.Itoa(f) + ".yaml"
		o[p], u[p], l[p] = strings.Join(os, "---\n"), strings.Join(us, "---\n"), strings.Join(ls, "---\n")
	}
	of, uf, lf := revision.MustFiles(o), revision.MustFiles(u), revision.MustFiles(l)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Merge(of, uf, lf, revision.ResourceMerge); err != nil {
			b.Fatal(err)
		}
	}
}
