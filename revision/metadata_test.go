package revision

import (
	"errors"
	"strings"
	"testing"
)

func TestMetadataValidate(t *testing.T) {
	good := []Metadata{
		{},
		{Labels: map[string]string{"app": "web", "example.com/tier": "", "a.b_c-d": "x.y_z-1"}},
		{Annotations: map[string]string{"kpt.dev/anything": "any value\nat all", "x": ""}},
	}
	for _, m := range good {
		if err := m.Validate(); err != nil {
			t.Errorf("Validate(%v) = %v, want nil", m, err)
		}
	}
	bad := map[string]Metadata{
		"empty label key":       {Labels: map[string]string{"": "x"}},
		"label key starts dash": {Labels: map[string]string{"-a": "x"}},
		"label key too long":    {Labels: map[string]string{strings.Repeat("a", 64): "x"}},
		"bad prefix":            {Labels: map[string]string{"Example.com/a": "x"}},
		"empty prefix":          {Labels: map[string]string{"/a": "x"}},
		"empty name":            {Labels: map[string]string{"example.com/": "x"}},
		"label value space":     {Labels: map[string]string{"a": "b c"}},
		"label value too long":  {Labels: map[string]string{"a": strings.Repeat("v", 64)}},
		"annotation key":        {Annotations: map[string]string{"a b": "x"}},
		"annotations too big":   {Annotations: map[string]string{"a": strings.Repeat("v", MaxAnnotationsSize)}},
	}
	for name, m := range bad {
		err := m.Validate()
		var me *MetadataError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &me) {
			t.Errorf("%s: Validate = %v, want a *MetadataError matching ErrInvalid", name, err)
		}
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	m := Metadata{Labels: map[string]string{"b": "2", "a": "1"}, Annotations: map[string]string{"z": "last", "k": "v"}}
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"labels":{"a":"1","b":"2"},"annotations":{"k":"v","z":"last"}}`; string(data) != want {
		t.Errorf("Marshal = %s, want %s", data, want)
	}
	back, err := ParseMetadata(data)
	if err != nil || !back.Equal(m) {
		t.Errorf("ParseMetadata = %v, %v; want %v", back, err, m)
	}
	if m.Hash() == "" || m.Hash() != back.Hash() || (Metadata{}).Hash() != "" {
		t.Errorf("Hash not stable or not empty for zero metadata")
	}
	if !(Metadata{Labels: map[string]string{}}).IsZero() || !(Metadata{}).Equal(Metadata{Labels: map[string]string{}}) {
		t.Errorf("empty maps must equal nil maps")
	}
	for _, in := range []string{"", "{", `{"labels":{"a b":"c"}}`, `{"labels":[1]}`} {
		if _, err := ParseMetadata([]byte(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseMetadata(%q) = %v, want ErrInvalid", in, err)
		}
	}
	c := m.Clone()
	c.Labels["a"] = "changed"
	if m.Labels["a"] != "1" {
		t.Errorf("Clone shares maps")
	}
}
