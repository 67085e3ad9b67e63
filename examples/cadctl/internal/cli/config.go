package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/urlcred"
)

// configFile is direct mode's configuration: the registered repositories,
// kept as Porch Repository objects so that repo get prints what porchctl
// prints. It holds no credentials.
type configFile struct {
	// Repositories are the registered repositories of every namespace.
	Repositories []porchapi.Repository `json:"repositories"`
}

// loadConfig reads the configuration at path; a missing file is an empty
// configuration.
func loadConfig(path string) (configFile, error) {
	var cfg configFile
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("read configuration: %w", err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("configuration %s is not valid: %w", path, err)
	}
	return cfg, nil
}

// save writes the configuration to path atomically, creating its
// directory. Credentials that an earlier version kept in a repository URL
// are left out.
func (cfg *configFile) save(path string) error {
	for i, r := range cfg.Repositories {
		if r.Spec.Git != nil && urlcred.Has(r.Spec.Git.Repo) {
			g := *r.Spec.Git
			g.Repo = urlcred.Strip(g.Repo)
			cfg.Repositories[i].Spec.Git = &g
		}
	}
	sort.Slice(cfg.Repositories, func(i, j int) bool {
		a, b := cfg.Repositories[i], cfg.Repositories[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write configuration: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".cadctl-config-*")
	if err != nil {
		return fmt.Errorf("write configuration: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write configuration: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write configuration: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write configuration: %w", err)
	}
	return nil
}

// find returns the index of the repository ns/name, or -1.
func (cfg *configFile) find(ns, name string) int {
	for i, r := range cfg.Repositories {
		if r.Namespace == ns && r.Name == name {
			return i
		}
	}
	return -1
}

// inNamespace returns the repositories of namespace ns.
func (cfg *configFile) inNamespace(ns string) []porchapi.Repository {
	var out []porchapi.Repository
	for _, r := range cfg.Repositories {
		if r.Namespace == ns {
			out = append(out, r)
		}
	}
	return out
}
