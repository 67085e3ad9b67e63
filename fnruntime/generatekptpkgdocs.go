package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/pipeline"
)

// ErrInvalidGenerateKptPkgDocsConfig is wrapped by the Go error of a
// generate-kpt-pkg-docs run whose functionConfig is unusable (not a
// ConfigMap, or a readme-path outside the package or naming a KRM file).
var ErrInvalidGenerateKptPkgDocsConfig = errors.New("invalid generate-kpt-pkg-docs functionConfig")

const (
	// pkgDocsMount is where the catalog's documentation mounts the package
	// into the function's container; in-process it is the package's
	// directory.
	pkgDocsMount       = "/tmp/"
	pkgDocsDefaultPath = "/tmp/README.md"
	pkgDocsDefaultRepo = "https://github.com/GoogleCloudPlatform/blueprints.git/catalog"
	pkgDocsTitleAnno   = "blueprints.cloud.google.com/title"
	pkgDocsMarker      = "PRE-COMMIT-BLUEPRINT DOCS HOOK"
)

// generateKptPkgDocs is the catalog's generate-kpt-pkg-docs (published
// only as its unstable image), from its README and its
// generate-kpt-pkg-docs-simple example: it reads the package's Kptfile
// and resources and replaces what is between the markers
// <!-- BEGINNING OF PRE-COMMIT-BLUEPRINT DOCS HOOK:TITLE --> and
// <!-- END OF PRE-COMMIT-BLUEPRINT DOCS HOOK:TITLE --> (and the BODY pair)
// of the readme with a generated title and body, keeping everything
// outside them; a pair that is absent is left out. The title is the
// Kptfile's blueprints.cloud.google.com/title annotation (its name when
// there is none); the body is the Kptfile's info.description, a table of
// the setters the resources use (kpt-set comments: name, value, type,
// count, as list-setters finds them), the sub-packages, a table of the
// resources (file, apiVersion, kind, name, namespace), links to the
// Config Connector reference of each cnrm kind, and usage steps naming
// repo-path/pkg-name and the Kptfile's configPath files.
//
// Its ConfigMap config has readme-path (default /tmp/README.md, the
// documented mount point /tmp being the package's directory; a relative
// path is relative to it), repo-path (default
// https://github.com/GoogleCloudPlatform/blueprints.git/catalog) and
// pkg-name (default the Kptfile's name). The readme is written through
// ResourceList.WriteFiles; one that does not exist is a warning and
// nothing is written.
func generateKptPkgDocs(ctx context.Context, rl *pipeline.ResourceList) error {
	cfg := map[string]string{}
	if fc := rl.FunctionConfig; fc != nil {
		if fc.GetKind() != "ConfigMap" {
			return pkgDocsConfigError(fmt.Sprintf("functionConfig must be a ConfigMap, not %s %q", fc.GetKind(), fc.GetName()))
		}
		cfg = configData(fc)
	}
	readme := cfg["readme-path"]
	if readme == "" {
		readme = pkgDocsDefaultPath
	}
	rel, err := pkgDocsReadmePath(readme)
	if err != nil {
		return pkgDocsConfigError(err.Error())
	}
	var kf *yaml.RNode
	root := "" // the package-path annotation of the package running the function
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		pp := it.GetAnnotations()[pipeline.PackagePathAnnotation]
		if itemPath(it) == "Kptfile" && it.GetKind() == "Kptfile" && (kf == nil || len(pp) < len(root)) {
			kf, root = it, pp
		}
	}
	if kf == nil {
		return failWith(rl, "the package's Kptfile is not among the input: generate-kpt-pkg-docs reads it (kpt fn eval --include-meta-resources)")
	}
	if rl.PackageFiles == nil {
		return failWith(rl, "the package's files are not available: generate-kpt-pkg-docs reads "+rel+" in a render")
	}
	old, err := fs.ReadFile(rl.PackageFiles, rel)
	if err != nil {
		rl.Results = append(rl.Results, &pipeline.Result{Severity: pipeline.SeverityWarning,
			Message: fmt.Sprintf("readme %s does not exist: skipping readme generation", readme)})
		return nil
	}
	name := cfg["pkg-name"]
	if name == "" {
		name = kf.GetName()
	}
	repo := cfg["repo-path"]
	if repo == "" {
		repo = pkgDocsDefaultRepo
	}
	title := kf.GetAnnotations()[pkgDocsTitleAnno]
	if title == "" {
		title = kf.GetName()
	}
	out := insertBetweenMarkers(string(old), "TITLE", "# "+title+"\n\n")
	out = insertBetweenMarkers(out, "BODY", pkgDocsBody(rl.Items, root, kf, name, repo))
	if rl.WriteFiles == nil {
		rl.WriteFiles = map[string][]byte{}
	}
	rl.WriteFiles[rel] = []byte(out)
	rl.Results = append(rl.Results, &pipeline.Result{Severity: pipeline.SeverityInfo,
		Message: "generated readme " + rel, File: &pipeline.File{Path: rel}})
	return nil
}

func pkgDocsConfigError(msg string) error {
	return &configError{msg: msg, stderr: msg, cause: ErrInvalidGenerateKptPkgDocsConfig}
}

// pkgDocsReadmePath maps readme-path to a path in the package: the
// documented mount point /tmp/ is the package's directory, a relative
// path is relative to it.
func pkgDocsReadmePath(p string) (string, error) {
	rel := p
	if strings.HasPrefix(p, pkgDocsMount) {
		rel = strings.TrimPrefix(p, pkgDocsMount)
	} else if path.IsAbs(p) {
		return "", fmt.Errorf("readme-path %q is outside the package: in-process, the package's directory is the documented mount point %s", p, pkgDocsMount)
	}
	rel = path.Clean(rel)
	if !fs.ValidPath(rel) || rel == "." {
		return "", fmt.Errorf("readme-path %q is not a file in the package", p)
	}
	switch strings.ToLower(path.Ext(rel)) {
	case ".yaml", ".yml", ".json":
		return "", fmt.Errorf("readme-path %q names a KRM file of the package", p)
	}
	if path.Base(rel) == "Kptfile" {
		return "", fmt.Errorf("readme-path %q names the package's Kptfile", p)
	}
	return rel, nil
}

// insertBetweenMarkers replaces the lines between the BEGINNING and END
// marker lines of section with content followed by an empty line, as the
// catalog's example shows; text without both markers is returned as is.
func insertBetweenMarkers(text, section, content string) string {
	begin := "<!-- BEGINNING OF " + pkgDocsMarker + ":" + section + " -->"
	end := "<!-- END OF " + pkgDocsMarker + ":" + section + " -->"
	lines := strings.SplitAfter(text, "\n")
	b, e := -1, -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if b < 0 && t == begin {
			b = i
		} else if b >= 0 && t == end {
			e = i
			break
		}
	}
	if b < 0 || e < 0 {
		return text
	}
	var sb strings.Builder
	for _, l := range lines[:b+1] {
		sb.WriteString(l)
	}
	if !strings.HasSuffix(lines[b], "\n") {
		sb.WriteString("\n")
	}
	sb.WriteString(content)
	sb.WriteString("\n")
	for _, l := range lines[e:] {
		sb.WriteString(l)
	}
	return sb.String()
}

// pkgFilePath is an item's path relative to the package running the
// function, whose package-path annotation is root: in a render, the items
// of a subpackage have paths relative to their own package and that
// package's package-path.
func pkgFilePath(it *yaml.RNode, root string) string {
	p := path.Clean(itemPath(it))
	pp := it.GetAnnotations()[pipeline.PackagePathAnnotation]
	if root != "" && strings.HasPrefix(pp, root+"/") {
		return path.Join(strings.TrimPrefix(pp, root+"/"), p)
	}
	return p
}

// pkgDocsBody generates the body section for the package whose Kptfile is
// kf and whose package-path annotation is root.
func pkgDocsBody(items []*yaml.RNode, root string, kf *yaml.RNode, name, repo string) string {
	var configs []string // the Kptfile's configPath files, in pipeline order
	isConfig := map[string]bool{}
	for _, list := range []string{"mutators", "validators"} {
		for _, step := range getSlice(kf, "pipeline", list) {
			if cp, ok := nestedString(step, "configPath"); ok && cp != "" && !isConfig[path.Clean(cp)] {
				isConfig[path.Clean(cp)] = true
				configs = append(configs, path.Clean(cp))
			}
		}
	}
	type subpkg struct{ dir, name, desc string }
	var subs []subpkg
	for _, it := range items {
		p := pkgFilePath(it, root)
		if it.GetKind() == "Kptfile" && path.Base(p) == "Kptfile" && path.Dir(p) != "." {
			desc, _ := nestedString(it, "info", "description")
			subs = append(subs, subpkg{dir: path.Dir(p), name: it.GetName(), desc: desc})
		}
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].dir < subs[j].dir })
	inSub := func(p string) bool {
		for _, s := range subs {
			if strings.HasPrefix(p, s.dir+"/") {
				return true
			}
		}
		return false
	}
	var resources []*yaml.RNode
	for _, it := range items {
		p := pkgFilePath(it, root)
		if p == "Kptfile" || isConfig[p] || inSub(p) || isLocalConfig(it) {
			continue
		}
		resources = append(resources, it)
	}

	var sections []string
	if desc, _ := nestedString(kf, "info", "description"); desc != "" {
		sections = append(sections, desc)
	}

	ls := &setterLister{scalars: map[string]*listedSetter{}, arrays: map[string]*listedSetter{}}
	for _, it := range resources {
		walkSetters(ls, it.YNode(), "")
	}
	var setters []*listedSetter
	for _, s := range ls.arrays {
		setters = append(setters, s)
	}
	for _, s := range ls.scalars {
		setters = append(setters, s)
	}
	sort.SliceStable(setters, func(i, j int) bool {
		if setters[i].name != setters[j].name {
			return setters[i].name < setters[j].name
		}
		return setters[i].typ == "array"
	})
	if len(setters) == 0 {
		sections = append(sections, "## Setters\n\nThis package has no setters.")
	} else {
		rows := make([][]string, len(setters))
		for i, s := range setters {
			rows[i] = []string{s.name, s.value, s.typ, strconv.Itoa(s.count)}
		}
		sections = append(sections, "## Setters\n\n"+markdownTable([]string{"Name", "Value", "Type", "Count"}, rows, []bool{false, false, false, true}))
	}

	if len(subs) == 0 {
		sections = append(sections, "## Sub-packages\n\nThis package has no sub-packages.")
	} else {
		rows := make([][]string, len(subs))
		for i, s := range subs {
			rows[i] = []string{"[" + s.name + "](" + s.dir + ")", s.desc}
		}
		sections = append(sections, "## Sub-packages\n\n"+markdownTable([]string{"Name", "Description"}, rows, nil))
	}

	if len(resources) == 0 {
		sections = append(sections, "## Resources\n\nThis package has no resources.")
	} else {
		rows := make([][]string, len(resources))
		for i, it := range resources {
			rows[i] = []string{pkgFilePath(it, root), it.GetApiVersion(), it.GetKind(), it.GetName(), it.GetNamespace()}
		}
		sections = append(sections, "## Resources\n\n"+markdownTable([]string{"File", "APIVersion", "Kind", "Name", "Namespace"}, rows, nil))
	}

	var refs []string
	seen := map[string]bool{}
	for _, it := range resources {
		group, _ := groupVersion(it.GetApiVersion())
		service, ok := strings.CutSuffix(group, ".cnrm.cloud.google.com")
		if !ok || service == "" || seen[it.GetKind()] {
			continue
		}
		seen[it.GetKind()] = true
		refs = append(refs, fmt.Sprintf("- [%s](https://cloud.google.com/config-connector/docs/reference/resource-docs/%s/%s)",
			it.GetKind(), service, strings.ToLower(it.GetKind())))
	}
	if len(refs) > 0 {
		sections = append(sections, "## Resource References\n\n"+strings.Join(refs, "\n"))
	}

	sections = append(sections, pkgDocsUsage(name, repo, configs))
	return strings.Join(sections, "\n\n") + "\n"
}

// pkgDocsUsage is the usage section: "## Usage" and a numbered list of
// the kpt commands a user of the package runs (kpt pkg get of
// repo/name@${VERSION}, cd into it, the Kptfile's function config files
// to edit, kpt fn render, kpt live init, apply and status), as the
// catalog's example lists them. The sentences around the commands are
// cad's own words.
func pkgDocsUsage(name, repo string, configs []string) string {
	steps := []string{
		"1.  Fetch the package:\n    ```shell\n    kpt pkg get " + strings.TrimSuffix(repo, "/") + "/" + name + "@${VERSION}\n    ```\n" +
			"    `${VERSION}` is a branch or tag of that repository, `main` say.",
		"1.  Change to the package's directory:\n    ```shell\n    cd \"./" + name + "/\"\n    ```",
	}
	if len(configs) > 0 {
		steps = append(steps, "1.  Put your values in the package's function configs:\n    - "+strings.Join(configs, "\n    - "))
	}
	steps = append(steps,
		"1.  Run the Kptfile's pipeline over the package:\n    ```shell\n    kpt fn render\n    ```",
		"1.  Create the inventory that records what kpt applies:\n    ```shell\n    kpt live init --namespace ${NAMESPACE}\n    ```\n"+
			"    `${NAMESPACE}` is where the inventory's ResourceGroup lives,\n    `config-control` say.",
		"1.  Apply the resources to the cluster:\n    ```shell\n    kpt live apply\n    ```",
		"1.  Follow them until the cluster reports them current:\n    ```shell\n    kpt live status --output table --poll-until current\n    ```",
	)
	return "## Usage\n\n" + strings.Join(steps, "\n\n")
}

// markdownTable renders a table as the catalog's example shows: every
// column as wide as its widest cell, one space of padding, headers
// centred, cells left-aligned or, where right says so, right-aligned.
func markdownTable(headers []string, rows [][]string, right []bool) string {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var sb strings.Builder
	line := func(cells []string, cell func(i int, c string) string) {
		sb.WriteString("|")
		for i, c := range cells {
			sb.WriteString(" " + cell(i, c) + " |")
		}
		sb.WriteString("\n")
	}
	line(headers, func(i int, c string) string {
		pad := widths[i] - utf8.RuneCountInString(c)
		return strings.Repeat(" ", pad/2) + c + strings.Repeat(" ", pad-pad/2)
	})
	sb.WriteString("|")
	for _, w := range widths {
		sb.WriteString(strings.Repeat("-", w+2) + "|")
	}
	sb.WriteString("\n")
	for _, r := range rows {
		line(r, func(i int, c string) string {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < len(right) && right[i] {
				return pad + c
			}
			return c + pad
		})
	}
	return strings.TrimSuffix(sb.String(), "\n")
}
