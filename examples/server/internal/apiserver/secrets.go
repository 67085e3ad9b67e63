package apiserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// secretKey is the form of a Secret's keys, as Kubernetes checks it.
var secretKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// prepareSecret completes a Secret as Kubernetes does before storing it:
// stringData is merged into data and dropped, the type defaults to Opaque
// and cannot change, keys are checked, and an immutable Secret's data
// cannot change.
func prepareSecret(_ context.Context, _ *request, obj, oldObj runtime.Object) error {
	sec := obj.(*corev1.Secret)
	inv := func(field, msg string) error {
		return errInvalid(schema.GroupResource{Resource: resSecrets}, "Secret", sec.Name, field, msg)
	}
	for k, v := range sec.StringData {
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[k] = []byte(v)
	}
	sec.StringData = nil
	for k := range sec.Data {
		if !secretKey.MatchString(k) {
			return inv("data["+k+"]", fmt.Sprintf("Invalid value: %q: a valid config key must consist of alphanumeric characters, '-', '_' or '.'", k))
		}
	}
	if sec.Type == "" {
		sec.Type = corev1.SecretTypeOpaque
	}
	old, _ := oldObj.(*corev1.Secret)
	switch {
	case old == nil:
	case old.Type != sec.Type:
		return inv("type", "field is immutable")
	case old.Immutable != nil && *old.Immutable && !maps.EqualFunc(old.Data, sec.Data, bytes.Equal):
		return inv("data", "field is immutable when `immutable` is set")
	case old.Immutable != nil && *old.Immutable && (sec.Immutable == nil || !*sec.Immutable):
		return inv("immutable", "field is immutable when `immutable` is set")
	}
	return nil
}

// storedSecret returns the data of Secret name of namespace ns as the
// server stores it, or false when there is none.
func (s *Server) storedSecret(ns, name string) (map[string][]byte, bool, error) {
	u, err := s.store.Get(resSecrets, ns, name)
	if err != nil {
		return nil, false, nil
	}
	m, _, _ := unstructured.NestedStringMap(u.Object, "data")
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, true, fmt.Errorf("secret %q of namespace %q: key %q is not base64", name, ns, k)
		}
		out[k] = b
	}
	return out, true, nil
}
