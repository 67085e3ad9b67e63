package revision

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestWithReadiness(t *testing.T) {
	info := Info{
		ReadinessGates: []ReadinessGate{{ConditionType: "a"}, {ConditionType: "b"}},
		Conditions: []Condition{
			{Type: "a", Status: ConditionTrue},
			{Type: "b", Status: ConditionTrue},
		},
	}
	md := Metadata{
		ReadinessGates: []ReadinessGate{{ConditionType: "b"}, {ConditionType: "c"}},
		Conditions: []Condition{
			{Type: "b", Status: ConditionFalse, Reason: "Checker"},
			{Type: "c", Status: ConditionTrue},
		},
	}
	got := info.WithReadiness(md)
	wantGates := []ReadinessGate{{ConditionType: "a"}, {ConditionType: "b"}, {ConditionType: "c"}}
	if !slices.Equal(got.ReadinessGates, wantGates) {
		t.Fatalf("gates %v, want the union %v", got.ReadinessGates, wantGates)
	}
	wantConds := []Condition{{Type: "a", Status: ConditionTrue}, {Type: "b", Status: ConditionFalse, Reason: "Checker"}, {Type: "c", Status: ConditionTrue}}
	if !slices.Equal(got.Conditions, wantConds) {
		t.Fatalf("conditions %v, want %v (revision data wins)", got.Conditions, wantConds)
	}
	if u := got.Unsatisfied(); !slices.Equal(u, []string{"b"}) {
		t.Fatalf("Unsatisfied = %v, want [b]", u)
	}
	if u := info.Unsatisfied(); u != nil {
		t.Fatalf("the Kptfile alone: Unsatisfied = %v, want nil", u)
	}
	if info.Conditions[1].Status != ConditionTrue || len(info.ReadinessGates) != 2 {
		t.Fatal("WithReadiness changed its receiver")
	}
	// A gate without any condition is unsatisfied; zero metadata changes nothing.
	if u := (Info{ReadinessGates: []ReadinessGate{{ConditionType: "x"}}}).WithReadiness(Metadata{}).Unsatisfied(); !slices.Equal(u, []string{"x"}) {
		t.Fatalf("Unsatisfied = %v, want [x]", u)
	}
}

func TestMetadataReadinessValidate(t *testing.T) {
	ok := Metadata{
		ReadinessGates: []ReadinessGate{{ConditionType: "a"}, {ConditionType: "nephio.org.Specializer.specialize"}},
		Conditions:     []Condition{{Type: "a", Status: ConditionUnknown}, {Type: "b", Status: ConditionFalse, Message: "m"}},
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]Metadata{
		"gate without type":   {ReadinessGates: []ReadinessGate{{}}},
		"gate twice":          {ReadinessGates: []ReadinessGate{{ConditionType: "a"}, {ConditionType: "a"}}},
		"gate type too long":  {ReadinessGates: []ReadinessGate{{ConditionType: strings.Repeat("a", MaxConditionTypeLength+1)}}},
		"condition no type":   {Conditions: []Condition{{Status: ConditionTrue}}},
		"condition no status": {Conditions: []Condition{{Type: "a"}}},
		"condition twice":     {Conditions: []Condition{{Type: "a", Status: ConditionTrue}, {Type: "a", Status: ConditionFalse}}},
	} {
		var me *MetadataError
		if err := m.Validate(); !errors.Is(err, ErrInvalid) || !errors.As(err, &me) {
			t.Errorf("%s: Validate = %v, want a *MetadataError", name, err)
		}
	}
	// The readiness is part of the canonical form, the hash and equality.
	data, err := ok.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseMetadata(data)
	if err != nil || !back.Equal(ok) {
		t.Fatalf("ParseMetadata(%s) = %+v, %v", data, back, err)
	}
	if ok.Hash() == (Metadata{ReadinessGates: ok.ReadinessGates}).Hash() || ok.IsZero() {
		t.Fatal("conditions do not count in Hash or IsZero")
	}
	c := ok.Clone()
	c.Conditions[0].Status = ConditionTrue
	if ok.Conditions[0].Status != ConditionUnknown || ok.ReadinessEqual(c) {
		t.Fatal("Clone shares the conditions, or ReadinessEqual ignores them")
	}
	if w := ok.WithCondition(Condition{Type: "b", Status: ConditionTrue}); w.Conditions[1].Status != ConditionTrue || ok.Conditions[1].Status != ConditionFalse || len(w.Conditions) != 2 {
		t.Fatalf("WithCondition = %+v", w.Conditions)
	}
}

func TestProjectReadiness(t *testing.T) {
	kptfile := `# the package
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: p # its name
info:
  readinessGates:
  - conditionType: a
status:
  conditions:
  - type: a
    status: "False"
`
	files, err := NewFiles(map[string][]byte{KptfileName: []byte(kptfile), "cm.yaml": []byte("a: 1\n")})
	if err != nil {
		t.Fatal(err)
	}
	md := Metadata{
		ReadinessGates: []ReadinessGate{{ConditionType: "a"}, {ConditionType: "b"}},
		Conditions:     []Condition{{Type: "a", Status: ConditionTrue}, {Type: "b", Status: ConditionUnknown}},
	}
	out, err := ProjectReadiness(files, md)
	if err != nil {
		t.Fatal(err)
	}
	info, err := InfoFromFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.ReadinessGates, md.ReadinessGates) || !slices.Equal(info.Conditions, md.Conditions) {
		t.Fatalf("projected Kptfile has gates %v and conditions %v", info.ReadinessGates, info.Conditions)
	}
	data, _ := out.Get(KptfileName)
	if !strings.Contains(string(data), "# the package") || !strings.Contains(string(data), "# its name") {
		t.Fatalf("the projection lost the Kptfile's comments:\n%s", data)
	}
	// Projecting again changes nothing; nor does zero metadata or a package without a Kptfile.
	again, err := ProjectReadiness(out, md)
	if err != nil || !again.Equal(out) {
		t.Fatalf("a second projection changed the files (%v)", err)
	}
	if same, err := ProjectReadiness(files, Metadata{Labels: map[string]string{"a": "b"}}); err != nil || !same.Equal(files) {
		t.Fatal("a projection without readiness changed the files")
	}
	plain, _ := NewFiles(map[string][]byte{"cm.yaml": []byte("a: 1\n")})
	if same, err := ProjectReadiness(plain, md); err != nil || !same.Equal(plain) {
		t.Fatal("a projection changed a package without a Kptfile")
	}
	bad, _ := NewFiles(map[string][]byte{KptfileName: []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: [\n")})
	if _, err := ProjectReadiness(bad, md); !errors.Is(err, ErrInvalid) {
		t.Fatalf("projection into a broken Kptfile: %v, want ErrInvalid", err)
	}
}
