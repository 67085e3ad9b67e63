package helmfn

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// credentials are basic-auth credentials for one chart's repository.
type credentials struct {
	username, password string
	host               string // the repository's host[:port]; nothing is sent elsewhere
}

// repoHost returns the host[:port] of a chart repository URL (http(s)://
// or oci://), the only host credentials for it are sent to; false when it
// has none.
func repoHost(repo string) (string, bool) {
	u, err := url.Parse(strings.Replace(repo, "oci://", "https://", 1))
	if err != nil || u.Host == "" {
		return "", false
	}
	return u.Host, true
}

// findCredentials reads the Secret ref names from items; nil, nil when
// ref is nil.
func findCredentials(items []*yaml.RNode, ref *AuthRef, repo string) (*credentials, error) {
	if ref == nil {
		return nil, nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = "default"
	}
	for _, it := range items {
		if it.GetKind() != "Secret" || it.GetName() != ref.Name {
			continue
		}
		if ins := it.GetNamespace(); ins != ns && (ins != "" || ns != "default") {
			continue
		}
		get := func(key string) (string, error) {
			if v, ok := it.GetDataMap()[key]; ok {
				b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
				if err != nil {
					return "", fmt.Errorf("chartArgs.auth: Secret %s/%s: data.%s is not base64: %w", ns, ref.Name, key, err)
				}
				return string(b), nil
			}
			if n, err := it.Pipe(yaml.Lookup("stringData", key)); err == nil && n != nil {
				return yaml.GetValue(n), nil
			}
			return "", fmt.Errorf("chartArgs.auth: Secret %s/%s has no %s", ns, ref.Name, key)
		}
		user, err := get("username")
		if err != nil {
			return nil, err
		}
		pass, err := get("password")
		if err != nil {
			return nil, err
		}
		host, ok := repoHost(repo)
		if !ok {
			return nil, fmt.Errorf("chartArgs.auth: repo %q has no host", repo)
		}
		return &credentials{username: user, password: pass, host: host}, nil
	}
	return nil, fmt.Errorf("chartArgs.auth: Secret %s/%s not found in the input resources", ns, ref.Name)
}
