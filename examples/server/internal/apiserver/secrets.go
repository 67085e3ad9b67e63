package apiserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// secretKey is the form of a Secret's keys, as Kubernetes checks it.
var secretKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// prepareSecret completes a Secret as Kubernetes does before storing it:
// stringData is merged into data (base64) and dropped, the type defaults
// to Opaque and cannot change, keys are checked, and an immutable
// Secret's data cannot change.
func prepareSecret(_ context.Context, rq *request, u, old *unstructured.Unstructured) error {
	gr := groupResource{"", resSecrets}
	inv := func(field, msg string) error { return errInvalid(gr, "Secret", u.GetName(), field, msg) }
	data := map[string]any{}
	if d, ok := u.Object["data"]; ok && d != nil {
		m, ok := d.(map[string]any)
		if !ok {
			return inv("data", "must be a map of keys to base64 values")
		}
		for k, v := range m {
			sv, ok := v.(string)
			if !ok {
				return inv("data["+k+"]", "must be a base64 string")
			}
			if _, err := base64.StdEncoding.DecodeString(sv); err != nil {
				return inv("data["+k+"]", "must be base64: "+err.Error())
			}
			data[k] = sv
		}
	}
	if sd, ok := u.Object["stringData"]; ok && sd != nil {
		m, ok := sd.(map[string]any)
		if !ok {
			return inv("stringData", "must be a map of keys to strings")
		}
		for k, v := range m {
			sv, ok := v.(string)
			if !ok {
				return inv("stringData["+k+"]", "must be a string")
			}
			data[k] = base64.StdEncoding.EncodeToString([]byte(sv))
		}
	}
	delete(u.Object, "stringData")
	for k := range data {
		if !secretKey.MatchString(k) {
			return inv("data["+k+"]", fmt.Sprintf("Invalid value: %q: a valid config key must consist of alphanumeric characters, '-', '_' or '.'", k))
		}
	}
	if len(data) > 0 {
		u.Object["data"] = data
	} else {
		delete(u.Object, "data")
	}
	typ, _, _ := unstructured.NestedString(u.Object, "type")
	if typ == "" {
		typ = "Opaque"
		u.Object["type"] = typ
	}
	if old == nil {
		return nil
	}
	oldType, _, _ := unstructured.NestedString(old.Object, "type")
	if oldType != typ {
		return inv("type", "field is immutable")
	}
	if imm, _, _ := unstructured.NestedBool(old.Object, "immutable"); imm {
		oldData, _, _ := unstructured.NestedMap(old.Object, "data")
		if fmt.Sprint(oldData) != fmt.Sprint(data) {
			return inv("data", "field is immutable when `immutable` is set")
		}
		if newImm, _, _ := unstructured.NestedBool(u.Object, "immutable"); !newImm {
			return inv("immutable", "field is immutable when `immutable` is set")
		}
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
