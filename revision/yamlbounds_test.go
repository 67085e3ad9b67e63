package revision_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/revision"
)

func TestCheckYAMLRefusesHostile(t *testing.T) {
	want := map[string]string{
		"laughs": "MaxAliasNodes", "mergebomb": "MaxAliasNodes", "deep": "MaxDepth",
		"documents": "MaxDocuments", "hugemap": "MaxMapEntries",
	}
	for name, data := range hostileyaml.All() {
		t.Run(name, func(t *testing.T) {
			err := revision.CheckYAML(context.Background(), "x/"+name+".yaml", []byte(data), nil)
			var le *revision.YAMLLimitError
			if !errors.Is(err, revision.ErrInvalid) || !errors.As(err, &le) {
				t.Fatalf("CheckYAML: %v, want a *YAMLLimitError", err)
			}
			if le.Limit != want[name] || le.File != "x/"+name+".yaml" || !strings.Contains(err.Error(), `"x/`+name+`.yaml"`) {
				t.Fatalf("error %q (limit %s), want %s naming the file", err, le.Limit, want[name])
			}
			// The parsers of the package refuse it the same way.
			if _, err := revision.ParseKptfile([]byte(data)); !errors.As(err, &le) {
				t.Errorf("ParseKptfile: %v, want a *YAMLLimitError", err)
			}
			if _, err := revision.ParsePackageFile([]byte(data)); !errors.As(err, &le) {
				t.Errorf("ParsePackageFile: %v, want a *YAMLLimitError", err)
			}
		})
	}
}

func TestCheckYAMLAcceptsOrdinary(t *testing.T) {
	for name, data := range map[string]string{
		"anchors":  "a: &a {x: 1, y: [1, 2]}\nb: *a\nc:\n  <<: *a\n  x: 2\n",
		"streams":  "---\na: 1\n---\n# only a comment\n---\nb: [1, {c: d}]\n",
		"not yaml": "a: [\n",
		"empty":    "",
		"scalars":  "just a string",
		"kptfile":  "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: set-labels:v0.1\n    configMap: {a: b}\n",
		"at most":  hostileyaml.Laughs(3, 10) + hostileyaml.Deep(900) + hostileyaml.HugeMap(19_000)[len("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n"):],
	} {
		if err := revision.CheckYAML(context.Background(), name, []byte(data), nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCheckYAMLCounts: the bounds are exact, aliases count the expanded
// size of what they name (nested aliases included), and a negative bound
// lifts it.
func TestCheckYAMLCounts(t *testing.T) {
	// a: 1 + 3 nodes; b: 1 + 2 aliases of 4; c: alias of b (1 + 8).
	const data = "a: &a [x, y, z]\nb: &b [*a, *a]\nc: *b\n"
	for _, tc := range []struct {
		lim  revision.YAMLLimits
		want string
	}{
		{revision.YAMLLimits{MaxAliasNodes: 17}, ""},
		{revision.YAMLLimits{MaxAliasNodes: 16}, "MaxAliasNodes"},
		{revision.YAMLLimits{MaxAliasNodes: -1, MaxNodes: 27}, ""},
		{revision.YAMLLimits{MaxNodes: 26}, "MaxNodes"},
		{revision.YAMLLimits{MaxDepth: 4}, ""},
		{revision.YAMLLimits{MaxDepth: 3}, "MaxDepth"},
		{revision.YAMLLimits{MaxMapEntries: 3}, ""},
		{revision.YAMLLimits{MaxMapEntries: 2}, "MaxMapEntries"},
		{revision.YAMLLimits{MaxBytes: len(data)}, ""},
		{revision.YAMLLimits{MaxBytes: len(data) - 1}, "MaxBytes"},
		{revision.YAMLLimits{MaxDocuments: 1}, ""},
	} {
		err := revision.CheckYAML(context.Background(), "f", []byte(data), &tc.lim)
		var le *revision.YAMLLimitError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v, want nil", tc.lim, err)
		case tc.want != "" && (!errors.As(err, &le) || le.Limit != tc.want):
			t.Errorf("%+v: %v, want %s", tc.lim, err, tc.want)
		}
	}
	// Sizes too large for an int saturate instead of wrapping around.
	huge := []byte(hostileyaml.Laughs(40, 9)) // 9^40 strings
	var le *revision.YAMLLimitError
	if err := revision.CheckYAML(context.Background(), "f", huge, &revision.YAMLLimits{MaxAliasNodes: -1}); !errors.As(err, &le) || le.Limit != "MaxNodes" {
		t.Errorf("9^40 laughs without an alias bound: %v, want MaxNodes", err)
	}
	lifted := &revision.YAMLLimits{MaxDocuments: -1}
	if err := revision.CheckYAML(context.Background(), "f", []byte(hostileyaml.ManyDocuments(10_001)), lifted); err != nil {
		t.Errorf("MaxDocuments -1: %v", err)
	}
}

func TestCheckYAMLCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := revision.CheckYAML(ctx, "f", []byte(hostileyaml.ManyDocuments(10)), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("CheckYAML: %v, want context.Canceled", err)
	}
}

// countdown is a context that ends after its Err has been asked n times.
type countdown struct {
	context.Context
	n int
}

func (c *countdown) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestCheckYAMLCancelledMidway: the check looks at the context between
// documents, so a long file stops soon after the caller has gone.
func TestCheckYAMLCancelledMidway(t *testing.T) {
	ctx := &countdown{Context: context.Background(), n: 10}
	if err := revision.CheckYAML(ctx, "f", []byte(hostileyaml.ManyDocuments(1000)), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("CheckYAML: %v, want context.Canceled", err)
	}
	if ctx.n != -1 {
		t.Fatalf("Err asked %d times after the end, want once", -ctx.n)
	}
}

// TestCheckYAMLFilesPackageBounds: documents and nodes are also bounded
// over the package, so splitting a stream over many files does not
// escape the bound; the error names the file that crossed it.
func TestCheckYAMLFilesPackageBounds(t *testing.T) {
	m := map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n", "README.md": hostileyaml.ManyDocuments(20_000)}
	for i := range 9 {
		m[fmt.Sprintf("cm%d.yaml", i)] = hostileyaml.ManyDocuments(1_200)
	}
	files := revision.MustFiles(m)
	err := revision.CheckYAMLFiles(context.Background(), files, nil)
	var le *revision.YAMLLimitError
	if !errors.As(err, &le) || le.Limit != "MaxPackageDocuments" || le.File != "cm8.yaml" || !errors.Is(err, revision.ErrInvalid) {
		t.Fatalf("CheckYAMLFiles: %v, want MaxPackageDocuments crossed in cm8.yaml", err)
	}
	if err := revision.CheckYAMLFiles(context.Background(), files, &revision.YAMLLimits{MaxPackageDocuments: 10_801}); err != nil {
		t.Fatalf("CheckYAMLFiles with room for 10,801 documents: %v", err)
	}
	err = revision.CheckYAMLFiles(context.Background(), files, &revision.YAMLLimits{MaxPackageDocuments: -1, MaxPackageNodes: 50_000})
	if !errors.As(err, &le) || le.Limit != "MaxPackageNodes" {
		t.Fatalf("CheckYAMLFiles: %v, want MaxPackageNodes", err)
	}
}
