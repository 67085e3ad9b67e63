package helmfn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Config is the RenderHelmChart function config (fn.kpt.dev/v1alpha1),
// the shape of the catalog's render-helm-chart v0.2.
type Config struct {
	HelmGlobals Globals `yaml:"helmGlobals,omitempty"`
	HelmCharts  []Chart `yaml:"helmCharts,omitempty"`
}

// Globals apply to every chart of a [Config].
type Globals struct {
	// ChartHome is the directory, in Options.Files, where a chart named
	// N is looked for (as ChartHome/N) before it is pulled. Empty means
	// DefaultChartHome. An absolute path ("/tmp/charts", as the catalog's
	// examples give it) is the same path from the root of Options.Files.
	ChartHome string `yaml:"chartHome,omitempty"`
	// ConfigHome is the catalog's HELM_CONFIG_HOME; cad keeps no Helm
	// configuration, so it is accepted and ignored.
	ConfigHome string `yaml:"configHome,omitempty"`
}

// Chart is one chart to render: where it comes from and how.
type Chart struct {
	ChartArgs       ChartArgs       `yaml:"chartArgs,omitempty"`
	TemplateOptions TemplateOptions `yaml:"templateOptions,omitempty"`
}

// ChartArgs say where a chart comes from.
type ChartArgs struct {
	// Name is the chart's name (required).
	Name string `yaml:"name,omitempty"`
	// Version is a version or a semver constraint; empty means the
	// newest.
	Version string `yaml:"version,omitempty"`
	// Repo is an HTTP(S) chart repository (with an index.yaml) or an
	// oci:// registry path under which the chart is Name.
	Repo string `yaml:"repo,omitempty"`
	// Registry is the catalog's registry for helm registry login; the
	// credentials of Auth go to Repo's host, so it is accepted and
	// ignored.
	Registry string `yaml:"registry,omitempty"`
	// Auth names a Secret among the input resources whose data.username
	// and data.password are the credentials for Repo (basic auth, sent to
	// Repo's host only).
	Auth *AuthRef `yaml:"auth,omitempty"`
}

// AuthRef is an object reference to a Secret in the input resources.
type AuthRef struct {
	APIVersion string `yaml:"apiVersion,omitempty"`
	Kind       string `yaml:"kind,omitempty"`
	Name       string `yaml:"name,omitempty"`
	// Namespace defaults to "default"; a resource without a namespace is
	// in "default".
	Namespace string `yaml:"namespace,omitempty"`
}

// TemplateOptions are the options of helm template.
type TemplateOptions struct {
	APIVersions  []string `yaml:"apiVersions,omitempty"`
	ReleaseName  string   `yaml:"releaseName,omitempty"`
	Namespace    string   `yaml:"namespace,omitempty"`
	NameTemplate string   `yaml:"nameTemplate,omitempty"`
	IncludeCRDs  bool     `yaml:"includeCRDs,omitempty"`
	SkipTests    bool     `yaml:"skipTests,omitempty"`
	Values       Values   `yaml:"values,omitempty"`
}

// Values are the chart values: files, inline values and how they combine.
type Values struct {
	// ValuesFiles are paths in Options.Files (an absolute one from their
	// root, as ChartHome) or http(s) URLs, merged in order (a later file
	// wins).
	ValuesFiles []string `yaml:"valuesFiles,omitempty"`
	// ValuesInline are values given in the config.
	ValuesInline map[string]any `yaml:"valuesInline,omitempty"`
	// ValuesMerge says how ValuesInline combines with the files (or, with
	// none, the chart's default values): "override" (the default; inline
	// wins), "merge" (the files win) or "replace" (inline only).
	ValuesMerge string `yaml:"valuesMerge,omitempty"`
}

// DefaultChartHome is the catalog's default chartHome.
const DefaultChartHome = "tmp/charts"

// DefaultReleaseName is the release name when a chart sets none, as
// helm template's.
const DefaultReleaseName = "release-name"

// parseConfig reads the function config: a RenderHelmChart or a
// ConfigMap.
func parseConfig(fc *yaml.RNode) (*Config, error) {
	if fc.IsNilOrEmpty() {
		return nil, errors.New("`functionConfig` must be a `ConfigMap` or `RenderHelmChart`")
	}
	api, kind := fc.GetApiVersion(), fc.GetKind()
	var cfg Config
	switch {
	case kind == "RenderHelmChart" && strings.HasPrefix(api, "fn.kpt.dev/"):
		s, err := fc.String()
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal([]byte(s), &cfg); err != nil {
			return nil, fmt.Errorf("RenderHelmChart: %w", err)
		}
	case api == "v1" && kind == "ConfigMap":
		var err error
		if cfg, err = configFromData(fc.GetDataMap()); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("`functionConfig` must be a `ConfigMap` or `RenderHelmChart`, not %s %s", api, kind)
	}
	if len(cfg.HelmCharts) == 0 {
		return nil, errors.New("no chart to render: helmCharts is empty")
	}
	for i, c := range cfg.HelmCharts {
		if c.ChartArgs.Name == "" {
			return nil, fmt.Errorf("helmCharts[%d]: chartArgs.name is required", i)
		}
		if a := c.ChartArgs.Auth; a != nil && (a.Name == "" || (a.Kind != "" && a.Kind != "Secret")) {
			return nil, fmt.Errorf("helmCharts[%d]: chartArgs.auth must name a Secret", i)
		}
		switch c.TemplateOptions.Values.ValuesMerge {
		case "", "override", "merge", "replace":
		default:
			return nil, fmt.Errorf("helmCharts[%d]: valuesMerge must be one of merge, override, replace, not %q", i, c.TemplateOptions.Values.ValuesMerge)
		}
	}
	return &cfg, nil
}

// configFromData reads the ConfigMap form: one chart, flat keys.
func configFromData(d map[string]string) (Config, error) {
	boolean := func(k string) (bool, error) {
		v, ok := d[k]
		if !ok || v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("data.%s must be true or false, not %q", k, v)
		}
		return b, nil
	}
	crds, err := boolean("includeCRDs")
	if err != nil {
		return Config{}, err
	}
	skip, err := boolean("skipTests")
	if err != nil {
		return Config{}, err
	}
	c := Chart{
		ChartArgs: ChartArgs{Name: d["name"], Version: d["version"], Repo: d["repo"]},
		TemplateOptions: TemplateOptions{
			ReleaseName:  d["releaseName"],
			Namespace:    d["namespace"],
			NameTemplate: d["nameTemplate"],
			IncludeCRDs:  crds,
			SkipTests:    skip,
		},
	}
	if f := d["valuesFile"]; f != "" {
		c.TemplateOptions.Values.ValuesFiles = []string{f}
	}
	return Config{HelmGlobals: Globals{ChartHome: d["chartHome"], ConfigHome: d["configHome"]}, HelmCharts: []Chart{c}}, nil
}
