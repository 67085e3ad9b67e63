package k8sschema_test

import (
	"testing"

	"github.com/configasdata/cad/internal/k8sschema"
)

func TestShippedSchemaHasNewKinds(t *testing.T) {
	s := k8sschema.Versions()[0]
	if s.Version != "v1.37.2" {
		t.Fatalf("newest shipped version %s", s.Version)
	}
	for _, tc := range []struct {
		apiVersion, kind string
		want             bool
	}{
		{"autoscaling/v2", "HorizontalPodAutoscaler", true}, // since 1.23
		{"v1", "Pod", true},
		{"apps/v1", "Deployment", true},
		{"example.com/v1", "Custom", false},
		{"extensions/v1beta1", "Ingress", false}, // removed in 1.22
	} {
		if got := s.ForType(tc.apiVersion, tc.kind) != nil; got != tc.want {
			t.Errorf("%s %s: schema found %v, want %v", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
	if s.Root() == nil {
		t.Fatal("no root")
	}
}

func TestBadDataIsAnError(t *testing.T) {
	s := k8sschema.New("v0.0.0", []byte("not gzip"))
	if err := s.Load(); err == nil || s.ForType("v1", "Pod") != nil || s.Root() != nil {
		t.Fatalf("bad data: err %v", err)
	}
}
