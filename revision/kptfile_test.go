package revision

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/fixtures"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// conformanceDir is the shared kpt fixture tree (CAD_CONFORMANCE
// overrides the location); tests that need it skip when it is absent,
// and fail in CI.
func conformanceDir(t *testing.T) string {
	t.Helper()
	return fixtures.Dir(t)
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kptfile", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with testdata/kptfile/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "kptfile", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

func mustParse(t *testing.T, data []byte) *Kptfile {
	t.Helper()
	kf, err := ParseKptfile(data)
	if err != nil {
		t.Fatalf("ParseKptfile: %v", err)
	}
	return kf
}

func mustEncode(t *testing.T, kf *Kptfile) []byte {
	t.Helper()
	b, err := kf.Encode()
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return b
}

// sameData fails unless a and b decode to the same Kptfile.
func sameData(t *testing.T, a, b *Kptfile) {
	t.Helper()
	na, err := canonicalNode(a)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := canonicalNode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !equalNode(na, nb) {
		sa, _ := yaml.Marshal(a)
		sb, _ := yaml.Marshal(b)
		t.Errorf("Kptfiles differ:\n%s\n---\n%s", sa, sb)
	}
}

// commentLines returns the trimmed comment lines of a YAML text.
func commentLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, "#"); i >= 0 && !strings.Contains(l[:i], `"`) && !strings.Contains(l[:i], `'`) {
			out = append(out, strings.TrimSpace(l[i:]))
		}
	}
	return out
}

// conformanceRefused are the conformance Kptfiles kpt itself refuses to
// read, with a fragment of the expected error.
var conformanceRefused = map[string]string{
	"kpt/e2e/testdata/fn-render/no-format-on-failure/Kptfile":          "line 10: cannot unmarshal !!map into string",
	"kpt/e2e/testdata/fn-render/subpkg-has-invalid-kptfile/db/Kptfile": "mapping values are not allowed in this context",
	"kpt/e2e/testdata/fn-render/invalid-configmap-fnconfig/Kptfile":    "line 14: cannot unmarshal !!seq into string",
	"kpt/e2e/testdata/fn-render/basicpipeline-v1alpha1/Kptfile":        `has an old version ("v1alpha1") of the Kptfile schema`,
	"kpt/e2e/testdata/fn-render/basicpipeline-v1alpha2/Kptfile":        `has an old version ("v1alpha2") of the Kptfile schema`,
	"kpt/e2e/testdata/fn-render/invalid-kptfile/Kptfile":               "yaml: line 3: could not find expected ':'",
	"kpt/e2e/testdata/fn-render/kptfile-unknown-fields/Kptfile":        "line 13: field targetResources not found in type revision.Function",
	// upstream.git.commit is not a field of kpt's Git either.
	"kpt/internal/testutil/testdata/updateMergeConflict/Kptfile": "field commit not found in type revision.Git",
}

func TestKptfileConformance(t *testing.T) {
	dir := conformanceDir(t)
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == KptfileName {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 100 {
		t.Fatalf("found only %d Kptfiles under %s", len(paths), dir)
	}
	parsed := 0
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			kf, err := ParseKptfile(data)
			if want, refused := conformanceRefused[rel]; refused {
				if err == nil {
					t.Fatalf("parsed, want error containing %q", want)
				}
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q (matches ErrInvalid: %v), want one containing %q", err, errors.Is(err, ErrInvalid), want)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKptfile: %v", err)
			}
			parsed++

			// No change: byte-identical.
			if out := mustEncode(t, kf); !bytes.Equal(out, data) {
				t.Fatalf("round trip changed the file:\n%s\n---\n%s", data, out)
			}

			// A change and its undo: byte-identical again.
			name := kf.Metadata.Name
			kf.Metadata.Name = "changed"
			kf.Metadata.Name = name
			if out := mustEncode(t, kf); !bytes.Equal(out, data) {
				t.Fatalf("change and undo changed the file")
			}

			// A real change keeps every comment and all other data.
			kf.SetCondition(Condition{Type: "Rendered", Status: ConditionTrue, Reason: "RenderSuccess"})
			out := mustEncode(t, kf)
			back := mustParse(t, out)
			sameData(t, back, kf)
			have := strings.Join(commentLines(out), "\n")
			for _, c := range commentLines(data) {
				if !strings.Contains(have, c) {
					t.Errorf("comment %q lost:\n%s", c, out)
				}
			}
		})
	}
	t.Logf("%d Kptfiles, %d parsed, %d refused as kpt refuses them", len(paths), parsed, len(conformanceRefused))
}

func TestParseKptfileRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"v1alpha1", readTestdata(t, "v1alpha1.Kptfile"), `Kptfile has an old version ("v1alpha1") of the Kptfile schema`},
		{"v1alpha2", readTestdata(t, "v1alpha2.Kptfile"), `Kptfile has an old version ("v1alpha2") of the Kptfile schema`},
		{"unknown fields", readTestdata(t, "unknown-fields.Kptfile"), "yaml: unmarshal errors:\n  line 13: field targetResources not found in type revision.Function"},
		{"invalid yaml", readTestdata(t, "invalid.Kptfile"), "Kptfile can't be read: yaml: line 3: could not find expected ':'"},
		{"configMap not a string map", readTestdata(t, "bad-configmap.Kptfile"), "line 10: cannot unmarshal !!map into string"},
		{"unknown version", []byte("apiVersion: kpt.dev/v2\nkind: Kptfile\n"), `Kptfile has an unknown resource type ("kpt.dev/v2, Kind=Kptfile")`},
		{"other kind", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), `Kptfile has an unknown resource type ("/v1, Kind=ConfigMap")`},
		{"old version of another kind", []byte("apiVersion: kpt.dev/v1alpha1\nkind: Other\n"), `unknown resource type ("kpt.dev/v1alpha1, Kind=Other")`},
		{"no type", []byte("metadata:\n  name: x\n"), `unknown resource type ("/, Kind=")`},
		{"empty", nil, "Kptfile can't be read: empty document"},
		{"only a comment", []byte("# nothing\n"), "Kptfile can't be read"},
		{"sequence", []byte("- a\n- b\n"), "Kptfile can't be read"},
		{"scalar", []byte("hello\n"), "Kptfile can't be read"},
		{"metadata not a map", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: 3\n"), "Kptfile can't be read"},
		{"duplicate key", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: a\n  name: b\n"), `mapping key "name" already defined`},
		{"unknown top-level field", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nspec: {}\n"), "field spec not found in type revision.Kptfile"},
		{"unknown metadata field", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: a\n  uid: x\n"), "field uid not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kf, err := ParseKptfile(tc.data)
			if err == nil {
				t.Fatalf("parsed %+v, want an error", kf)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %q does not match ErrInvalid", err)
			}
			var ke *KptfileError
			if !errors.As(err, &ke) || ke.Field != "" {
				t.Errorf("error %#v is not a decode *KptfileError", err)
			}
		})
	}
}

func TestKptfileErrorUnwrap(t *testing.T) {
	_, err := ParseKptfile(readTestdata(t, "unknown-fields.Kptfile"))
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		t.Fatalf("error %v does not unwrap to a *yaml.TypeError", err)
	}
}

func TestParseKptfileFields(t *testing.T) {
	kf := mustParse(t, readTestdata(t, "commented.Kptfile"))
	want := &Kptfile{
		APIVersion: KptfileAPIVersion,
		Kind:       KptfileKind,
		Metadata: ObjectMeta{
			Name:        "backend",
			Annotations: map[string]string{"config.kubernetes.io/local-config": "true"},
		},
		Upstream: &Upstream{
			Type:           GitOrigin,
			Git:            &Git{Repo: "https://github.com/example/catalog.git", Directory: "/basens", Ref: "basens/v0"},
			UpdateStrategy: ResourceMerge,
		},
		UpstreamLock: &UpstreamLock{
			Type: GitOrigin,
			Git: &GitLock{Repo: "https://github.com/example/catalog.git", Directory: "/basens", Ref: "basens/v0",
				Commit: "b3e1d439516a5e8d49adc0c82d3e95578570dbfa"},
		},
		Info: &PackageInfo{
			Description:    "kpt package for provisioning a namespace",
			Emails:         []string{"platform@example.com"},
			ReadinessGates: []ReadinessGate{{ConditionType: "Ready"}},
		},
		Pipeline: &Pipeline{
			Mutators: []Function{
				{Image: "set-namespace:v0.4.1", ConfigMap: map[string]string{"namespace": "backend"}},
				{Name: "labels", Image: "ghcr.io/kptdev/krm-functions-catalog/set-labels:latest", ConfigPath: "labels.yaml"},
			},
			Validators: []Function{{Image: "kubeval:v0.3"}},
		},
		Status: &Status{Conditions: []Condition{{Type: "Ready", Status: ConditionFalse, Reason: "Pending"}}},
	}
	kf.doc = nil
	if !reflect.DeepEqual(kf, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", kf, want)
	}
}

// editCase is one change to commented.Kptfile and the text it must give.
type editCase struct {
	name string
	edit func(*Kptfile)
	// want turns the input text into the expected output.
	want func(string) string
}

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if strings.Count(s, old) != 1 {
		t.Fatalf("%q occurs %d times", old, strings.Count(s, old))
	}
	return strings.Replace(s, old, new, 1)
}

func TestKptfileEncodeKeepsFormatting(t *testing.T) {
	in := string(readTestdata(t, "commented.Kptfile"))
	for _, tc := range []editCase{
		{
			name: "set upstreamLock commit",
			edit: func(kf *Kptfile) { kf.UpstreamLock.Git.Commit = "0123456789abcdef0123456789abcdef01234567" },
			want: func(s string) string {
				return replaceOnce(t, s, "b3e1d439516a5e8d49adc0c82d3e95578570dbfa", "0123456789abcdef0123456789abcdef01234567")
			},
		},
		{
			name: "change info.description keeps its quotes",
			edit: func(kf *Kptfile) { kf.Info.Description = "provisions a namespace" },
			want: func(s string) string {
				return replaceOnce(t, s, `"kpt package for provisioning a namespace"`, `"provisions a namespace"`)
			},
		},
		{
			name: "change a single-quoted value",
			edit: func(kf *Kptfile) { kf.Upstream.Git.Repo = "https://example.com/other.git" },
			want: func(s string) string {
				return replaceOnce(t, s, "    repo: 'https://github.com/example/catalog.git'\n    directory: /basens\n    ref: basens/v0\n  updateStrategy",
					"    repo: 'https://example.com/other.git'\n    directory: /basens\n    ref: basens/v0\n  updateStrategy")
			},
		},
		{
			name: "add a condition",
			edit: func(kf *Kptfile) {
				kf.SetCondition(Condition{Type: "Rendered", Status: ConditionTrue, Reason: "RenderSuccess"})
			},
			want: func(s string) string {
				return replaceOnce(t, s, "      reason: Pending # not yet\n",
					"      reason: Pending # not yet\n    - type: Rendered\n      status: \"True\"\n      reason: RenderSuccess\n")
			},
		},
		{
			name: "replace a condition by type",
			edit: func(kf *Kptfile) {
				kf.SetCondition(Condition{Type: "Ready", Status: ConditionTrue, Reason: "Done"})
			},
			want: func(s string) string {
				return replaceOnce(t, s, "      status: \"False\"\n      reason: Pending # not yet\n", "      status: \"True\"\n      reason: Done # not yet\n")
			},
		},
		{
			name: "remove pipeline",
			edit: func(kf *Kptfile) { kf.Pipeline = nil },
			want: func(s string) string {
				start := strings.Index(s, "pipeline:\n")
				end := strings.Index(s, "status:\n")
				return s[:start] + s[end:]
			},
		},
		{
			name: "remove a mutator keeps the other's comment",
			edit: func(kf *Kptfile) { kf.Pipeline.Mutators = kf.Pipeline.Mutators[1:] },
			want: func(s string) string {
				return replaceOnce(t, s, "    # first the namespace\n    - image: set-namespace:v0.4.1\n      configMap:\n        namespace: backend # the target namespace\n", "")
			},
		},
		{
			name: "add a label in kpt's field order",
			edit: func(kf *Kptfile) { kf.Metadata.Labels = map[string]string{"team": "platform"} },
			want: func(s string) string {
				return replaceOnce(t, s, "  name: backend\n", "  name: backend\n  labels:\n    team: platform\n")
			},
		},
		{
			name: "add inventory between pipeline and status",
			edit: func(kf *Kptfile) { kf.Inventory = &Inventory{Namespace: "ns", Name: "inv", InventoryID: "id-1"} },
			want: func(s string) string {
				return replaceOnce(t, s, "status:\n", "inventory:\n  namespace: ns\n  name: inv\n  inventoryID: id-1\nstatus:\n")
			},
		},
		{
			name: "a value that needs quotes gets them",
			edit: func(kf *Kptfile) { kf.Upstream.Git.Ref = "true" },
			want: func(s string) string {
				return replaceOnce(t, s, "    ref: basens/v0\n  updateStrategy", "    ref: \"true\"\n  updateStrategy")
			},
		},
		{
			name: "remove status",
			edit: func(kf *Kptfile) { kf.Status = nil },
			want: func(s string) string {
				return s[:strings.Index(s, "status:\n")] + "# end of Kptfile\n"
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kf := mustParse(t, []byte(in))
			tc.edit(kf)
			got := string(mustEncode(t, kf))
			if want := tc.want(in); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			sameData(t, mustParse(t, []byte(got)), kf)
		})
	}
}

// TestKptfileEditGolden makes many changes at once to a commented Kptfile.
func TestKptfileEditGolden(t *testing.T) {
	in := readTestdata(t, "commented.Kptfile")
	kf := mustParse(t, in)
	kf.UpstreamLock.Git.Commit = "0123456789abcdef0123456789abcdef01234567"
	kf.SetCondition(Condition{Type: "Rendered", Status: ConditionTrue, Reason: "RenderSuccess"})
	kf.RemoveCondition("Ready")
	kf.Info.Description = "provisions a namespace"
	kf.Info.Keywords = []string{"namespace", "true"}
	kf.Metadata.Labels = map[string]string{"team": "platform"}
	kf.Pipeline.Mutators = append([]Function{{Name: "first", Image: "starlark:v0.5"}}, kf.Pipeline.Mutators...)
	kf.Pipeline.Mutators[2].ConfigPath = "labels-v2.yaml"
	kf.Pipeline.Validators = nil
	out := mustEncode(t, kf)
	golden(t, "edited.golden", out)
	sameData(t, mustParse(t, out), kf)
	for _, c := range []string{"# The blueprint for a namespace.", "# who we are", "# keep it local",
		"# the commit we last fetched", "# shown in the catalog", "# mutators run in order",
		"# first the namespace", "# the target namespace", "# then the labels", "# end of Kptfile"} {
		if !bytes.Contains(out, []byte(c)) {
			t.Errorf("comment %q lost", c)
		}
	}
}

func TestKptfileEncodeNoSideEffects(t *testing.T) {
	in := readTestdata(t, "commented.Kptfile")
	kf := mustParse(t, in)
	kf.Info.Description = "one"
	first := mustEncode(t, kf)
	if again := mustEncode(t, kf); !bytes.Equal(first, again) {
		t.Errorf("second Encode differs:\n%s\n---\n%s", first, again)
	}
	kf.Info.Description = "kpt package for provisioning a namespace"
	if out := mustEncode(t, kf); !bytes.Equal(out, in) {
		t.Errorf("undoing the change did not restore the input:\n%s", out)
	}
}

func TestKptfileEncodeStructure(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		edit func(*Kptfile)
		want string
	}{
		{
			name: "empty flow mapping becomes block",
			in:   "apiVersion: kpt.dev/v1\nkind: Kptfile\ninfo: {}\n",
			edit: func(kf *Kptfile) { kf.Info.Description = "d" },
			want: "apiVersion: kpt.dev/v1\nkind: Kptfile\ninfo:\n  description: d\n",
		},
		{
			name: "null section is filled",
			in:   "apiVersion: kpt.dev/v1\nkind: Kptfile\nupstream: # from where\n",
			edit: func(kf *Kptfile) { kf.Upstream = &Upstream{Type: GitOrigin} },
			want: "apiVersion: kpt.dev/v1\nkind: Kptfile\nupstream: # from where\n  type: git\n",
		},
		{
			name: "empty string value kept while unrelated field changes",
			in:   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: a\ninfo:\n  site: \"\"\n",
			edit: func(kf *Kptfile) { kf.Metadata.Name = "b" },
			want: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: b\ninfo:\n  site: \"\"\n",
		},
		{
			name: "empty string value set",
			in:   "apiVersion: kpt.dev/v1\nkind: Kptfile\ninfo:\n  site: \"\"\n",
			edit: func(kf *Kptfile) { kf.Info.Site = "https://example.com" },
			want: "apiVersion: kpt.dev/v1\nkind: Kptfile\ninfo:\n  site: \"https://example.com\"\n",
		},
		{
			name: "compact sequence indent kept for new items",
			in:   "apiVersion: kpt.dev/v1\nkind: Kptfile\ninfo:\n  emails:\n  - a@example.com\n",
			edit: func(kf *Kptfile) { kf.Info.Emails = append(kf.Info.Emails, "b@example.com") },
			want: "apiVersion: kpt.dev/v1\nkind: Kptfile\ninfo:\n  emails:\n  - a@example.com\n  - b@example.com\n",
		},
		{
			name: "new top-level field in canonical order",
			in:   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: a\nstatus:\n  conditions: []\n",
			edit: func(kf *Kptfile) { kf.Info = &PackageInfo{Description: "x"} },
			want: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: a\ninfo:\n  description: x\nstatus:\n  conditions: []\n",
		},
		{
			name: "reordered functions keep their comments",
			in:   "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n    # A\n    - image: a\n    # B\n    - image: b\n",
			edit: func(kf *Kptfile) {
				m := kf.Pipeline.Mutators
				m[0], m[1] = m[1], m[0]
			},
			want: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n    # B\n    - image: b\n    # A\n    - image: a\n",
		},
		{
			name: "named function edited after a rename of its neighbour",
			in:   "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n    - name: x # X\n      image: a\n    - name: y # Y\n      image: b\n",
			edit: func(kf *Kptfile) {
				kf.Pipeline.Mutators = []Function{{Name: "y", Image: "c"}}
			},
			want: "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n    - name: y # Y\n      image: c\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kf := mustParse(t, []byte(tc.in))
			tc.edit(kf)
			if got := string(mustEncode(t, kf)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestKptfileEncodeAliases checks that anchors, aliases and merge keys are
// written correctly, falling back to the canonical form where an in-place
// edit cannot express the change.
func TestKptfileEncodeAliases(t *testing.T) {
	in := `apiVersion: kpt.dev/v1
kind: Kptfile
upstream:
  type: git
  git: &src
    repo: https://example.com/r.git
    ref: main
upstreamLock:
  type: git
  git:
    <<: *src
    commit: abc
`
	for _, tc := range []struct {
		name string
		edit func(*Kptfile)
	}{
		{"change the anchored node", func(kf *Kptfile) { kf.Upstream.Git.Ref = "v2" }},
		{"change the merged node", func(kf *Kptfile) { kf.UpstreamLock.Git.Ref = "v2" }},
		{"remove a merged field", func(kf *Kptfile) { kf.UpstreamLock.Git.Repo = "" }},
		{"change the commit", func(kf *Kptfile) { kf.UpstreamLock.Git.Commit = "def" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kf := mustParse(t, []byte(in))
			if kf.UpstreamLock.Git.Repo != "https://example.com/r.git" {
				t.Fatalf("merge key not applied: %+v", kf.UpstreamLock.Git)
			}
			tc.edit(kf)
			out := mustEncode(t, kf)
			sameData(t, mustParse(t, out), kf)
		})
	}
}

func TestKptfileCanonicalGolden(t *testing.T) {
	kf := NewKptfile("example")
	kf.Metadata.Namespace = "ns"
	kf.Metadata.Labels = map[string]string{"b": "2", "a": "1"}
	kf.Metadata.Annotations = map[string]string{"config.kubernetes.io/local-config": "true"}
	kf.Upstream = &Upstream{Type: GitOrigin, Git: &Git{Repo: "https://github.com/example/catalog", Directory: "/basens", Ref: "v1"}, UpdateStrategy: ResourceMerge}
	kf.UpstreamLock = &UpstreamLock{Type: GitOrigin, Git: &GitLock{Repo: "https://github.com/example/catalog", Directory: "/basens", Ref: "v1", Commit: "0123456789abcdef0123456789abcdef01234567"}}
	kf.Info = &PackageInfo{
		Site: "https://example.com", Emails: []string{"a@example.com"}, License: "Apache-2.0", LicenseFile: "LICENSE",
		Description: "an example", Keywords: []string{"example"}, Man: "README.md",
		ReadinessGates: []ReadinessGate{{ConditionType: "Ready"}},
	}
	kf.Pipeline = &Pipeline{
		Mutators: []Function{
			{Name: "ns", Image: "set-namespace", Tag: "v0.4", ConfigMap: map[string]string{"namespace": "ns"},
				Selectors: []Selector{{Kind: "Deployment", Labels: map[string]string{"app": "x"}}},
				Exclude:   []Selector{{Name: "skip"}}},
			{Exec: "./fn.sh", ConfigPath: "fn-config.yaml"},
		},
		Validators: []Function{{Image: "ghcr.io/kptdev/krm-functions-catalog/kubeval:v0.3"}},
	}
	kf.Inventory = &Inventory{Namespace: "ns", Name: "inv", InventoryID: "1234"}
	kf.SetCondition(Condition{Type: "Rendered", Status: ConditionTrue, Reason: "RenderSuccess"})
	kf.Status.RenderStatus = &RenderStatus{
		MutationSteps: []PipelineStepResult{{
			Name: "ns", Image: "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4", ExitCode: 0,
			Results: []ResultItem{{Message: "namespace set", Severity: "info",
				ResourceRef: &ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", Namespace: "ns"},
				Field:       &Field{Path: "metadata.namespace", CurrentValue: "old", ProposedValue: "ns"},
				File:        &File{Path: "deploy.yaml", Index: 1},
				Tags:        map[string]string{"k": "v"}}},
		}},
	}
	out := mustEncode(t, kf)
	golden(t, "canonical.golden", out)
	back := mustParse(t, out)
	sameData(t, back, kf)
	if err := back.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	// The canonical output is stable: parsed and encoded unchanged it is
	// the same bytes, and a code-built copy gives the same bytes too.
	if again := mustEncode(t, back); !bytes.Equal(again, out) {
		t.Errorf("re-encoding changed the output")
	}
}

func TestKptfileCanonicalDefaults(t *testing.T) {
	var kf Kptfile
	kf.Metadata.Name = "x"
	got := string(mustEncode(t, &kf))
	want := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: x\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if kf.APIVersion != "" || kf.Kind != "" {
		t.Errorf("Encode modified its receiver: %+v", kf)
	}
	if got := string(mustEncode(t, NewKptfile("x"))); got != want {
		t.Errorf("NewKptfile: got\n%s\nwant\n%s", got, want)
	}
}

func TestKptfileConditions(t *testing.T) {
	kf := NewKptfile("x")
	if _, ok := kf.Condition("Ready"); ok {
		t.Error("Condition found on an empty Kptfile")
	}
	if kf.RemoveCondition("Ready") {
		t.Error("RemoveCondition removed from an empty Kptfile")
	}
	kf.SetCondition(Condition{Type: "Ready", Status: ConditionFalse})
	kf.SetCondition(Condition{Type: "Rendered", Status: ConditionTrue})
	kf.SetCondition(Condition{Type: "Ready", Status: ConditionTrue, Reason: "Done"})
	want := []Condition{{Type: "Ready", Status: ConditionTrue, Reason: "Done"}, {Type: "Rendered", Status: ConditionTrue}}
	if !reflect.DeepEqual(kf.Status.Conditions, want) {
		t.Errorf("conditions %+v, want %+v", kf.Status.Conditions, want)
	}
	if c, ok := kf.Condition("Ready"); !ok || c != want[0] {
		t.Errorf("Condition(Ready) = %+v, %v", c, ok)
	}
	if !kf.RemoveCondition("Ready") || kf.RemoveCondition("Ready") {
		t.Error("RemoveCondition did not remove exactly once")
	}
	if !reflect.DeepEqual(kf.Status.Conditions, want[1:]) {
		t.Errorf("conditions %+v, want %+v", kf.Status.Conditions, want[1:])
	}
}

func TestKptfileValidate(t *testing.T) {
	pipeline := func(fns ...Function) *Kptfile {
		kf := NewKptfile("x")
		kf.Pipeline = &Pipeline{Mutators: fns}
		return kf
	}
	for _, tc := range []struct {
		name string
		kf   *Kptfile
		want string // "" for valid
	}{
		{"no pipeline", NewKptfile("x"), ""},
		{"empty pipeline", &Kptfile{Pipeline: &Pipeline{}}, ""},
		{"image", pipeline(Function{Image: "set-labels:v0.1"}), ""},
		{"full image with digest", pipeline(Function{Image: "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.1@sha256:" + strings.Repeat("a", 64)}), ""},
		{"registry with port", pipeline(Function{Image: "localhost:5000/fn"}), ""},
		{"exec", pipeline(Function{Exec: "sed -e 's/foo/bar/'"}), ""},
		{"configPath in subdir", pipeline(Function{Image: "a", ConfigPath: "fn/config.yaml"}), ""},
		{"configPath with dot", pipeline(Function{Image: "a", ConfigPath: "./config.yaml"}), ""},
		{
			"neither image nor exec", pipeline(Function{Image: "a"}, Function{Name: "x"}),
			"Kptfile is invalid:\nField: `pipeline.mutators[1]`\nReason: must specify a functon (`image` or `exec`) to execute",
		},
		{
			"both image and exec", pipeline(Function{Image: "a", Exec: "b"}),
			"Kptfile is invalid:\nField: `pipeline.mutators[0]`\nReason: must not specify both `image` and `exec` at the same time",
		},
		{
			"bad image", pipeline(Function{Image: "not a/valid image"}),
			"Kptfile is invalid:\nField: `pipeline.mutators[0].image`\nValue: \"not a/valid image\"\nReason: function image reference \"not a/valid image\" is invalid: invalid reference format",
		},
		{"upper-case image", pipeline(Function{Image: "Set-Labels"}), "repository name must be lowercase"},
		{"bad digest length", pipeline(Function{Image: "a@sha256:" + strings.Repeat("a", 40)}), "invalid checksum digest length"},
		{"unknown digest", pipeline(Function{Image: "a@md5:" + strings.Repeat("a", 32)}), "unsupported digest algorithm"},
		{"upper-case digest", pipeline(Function{Image: "a@sha256:" + strings.Repeat("A", 64)}), "invalid checksum digest format"},
		{"long name", pipeline(Function{Image: strings.Repeat("a", 256)}), "repository name must not be more than 255 characters"},
		{
			"configMap and configPath", pipeline(Function{Image: "a", ConfigPath: "c.yaml", ConfigMap: map[string]string{"a": "b"}}),
			"functionConfig must not specify both `configMap` and `configPath` at the same time",
		},
		{
			"absolute configPath", pipeline(Function{Image: "a", ConfigPath: "/some/root/labelconfig.yaml"}),
			"Kptfile is invalid:\nField: `pipeline.mutators[0].configPath`\nValue: \"/some/root/labelconfig.yaml\"\nReason: path must be relative",
		},
		{
			"configPath outside", pipeline(Function{Image: "a"}, Function{Image: "b", ConfigPath: "some/../../home/.kube/config"}),
			"Kptfile is invalid:\nField: `pipeline.mutators[1].configPath`\nValue: \"some/../../home/.kube/config\"\nReason: path must not be outside the package",
		},
		{"blank configPath", pipeline(Function{Image: "a", ConfigPath: "  "}), "Reason: path must not be empty"},
		{
			"validator",
			&Kptfile{Pipeline: &Pipeline{Mutators: []Function{{Image: "a"}}, Validators: []Function{{Exec: "x"}, {}}}},
			"Field: `pipeline.validators[1]`",
		},
		{
			"mutators first",
			&Kptfile{Pipeline: &Pipeline{Mutators: []Function{{Image: "a"}, {}}, Validators: []Function{{}}}},
			"Field: `pipeline.mutators[1]`",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.kf.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate succeeded, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n%s\nwant it to contain\n%s", err, tc.want)
			}
			var ke *KptfileError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &ke) || ke.Field == "" {
				t.Errorf("error %#v is not a validation *KptfileError matching ErrInvalid", err)
			}
		})
	}
}

// TestKptfileValidateFixtures checks Validate against the conformance
// fixtures whose Kptfile kpt refuses before running any function.
func TestKptfileValidateFixtures(t *testing.T) {
	dir := filepath.Join(conformanceDir(t), "kpt", "e2e", "testdata", "fn-render")
	for _, tc := range []struct{ fixture, want string }{
		{"multiple-fnconfig", "functionConfig must not specify both `configMap` and `configPath` at the same time"},
		{"fnconfig-not-relative", "Kptfile is invalid:\nField: `pipeline.mutators[0].configPath`\nValue: \"/some/root/labelconfig.yaml\"\nReason: path must be relative"},
		{"fnconfig-outside-package", "Kptfile is invalid:\nField: `pipeline.mutators[1].configPath`\nValue: \"some/../../home/.kube/config\"\nReason: path must not be outside the package"},
		{"basicpipeline", ""},
		{"fnconfig", ""},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, tc.fixture, KptfileName))
			if err != nil {
				t.Fatal(err)
			}
			err = mustParse(t, data).Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestKptfileCopyEncodesIndependently(t *testing.T) {
	in := readTestdata(t, "commented.Kptfile")
	kf := mustParse(t, in)
	cp := *kf
	cp.Metadata.Name = "other"
	if out := mustEncode(t, kf); !bytes.Equal(out, in) {
		t.Error("changing a copy changed the original's encoding")
	}
	out := mustEncode(t, &cp)
	if want := bytes.Replace(in, []byte("name: backend"), []byte("name: other"), 1); !bytes.Equal(out, want) {
		t.Errorf("copy encoded as\n%s", out)
	}
}
