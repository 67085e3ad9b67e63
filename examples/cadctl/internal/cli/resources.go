package cli

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// Porch's revision metadata file, added by pull and required by push.
const (
	revisionMetadataFile = ".KptRevisionMetadata"
	revisionMetadataKind = "KptRevisionMetadata"
)

// revisionMetadata is the content of .KptRevisionMetadata: the object
// metadata of the PackageRevisionResources, whose resourceVersion a push
// sends back.
type revisionMetadata struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   metadataPart `json:"metadata"`
}

type metadataPart struct {
	Name            string            `json:"name,omitempty"`
	Namespace       string            `json:"namespace,omitempty"`
	UID             types.UID         `json:"uid,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
}

func runPull(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "pull PACKAGE_REVISION [DIR]", short: "Pull the content of a package revision.", long: `
With DIR (which must not exist) the files are written there, together with
.KptRevisionMetadata, which push needs; without it they are printed as a
ResourceList.`}
	fs := c.newFlagSet("rpkg pull")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("PACKAGE is a required positional argument")
	}
	if len(pos) > 2 {
		return usagef("too many arguments; PACKAGE and DIR are the only accepted positional arguments")
	}
	var dir string
	if len(pos) == 2 {
		dir = c.abs(pos[1])
		if _, err := os.Lstat(dir); err == nil {
			return fmt.Errorf("directory %q already exists, please delete the directory and retry", pos[1])
		}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	prr, err := cl.GetResources(c.ctx, pos[0])
	if err != nil {
		return err
	}
	res := map[string]string{}
	for k, v := range prr.Spec.Resources {
		res[k] = v
	}
	md, err := yaml.Marshal(revisionMetadata{APIVersion: porchapi.SchemeGroupVersion.String(), Kind: revisionMetadataKind,
		Metadata: metadataPart{Name: prr.Name, Namespace: prr.Namespace, UID: prr.UID, ResourceVersion: prr.ResourceVersion,
			Labels: prr.Labels, Annotations: prr.Annotations}})
	if err != nil {
		return err
	}
	res[revisionMetadataFile] = string(md)
	if dir == "" {
		return writeResourceList(c.stdout, res)
	}
	return writeDir(dir, res)
}

func writeDir(dir string, res map[string]string) error {
	for _, k := range sortedKeys(res) {
		if err := revision.ValidatePath(k); err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(res[k]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeResourceList prints the KRM files of res as one ResourceList, as
// porchctl pull does.
func writeResourceList(w io.Writer, res map[string]string) error {
	var inputs []kio.Reader
	for _, k := range sortedKeys(res) {
		if !isResourceFile(k) {
			continue
		}
		inputs = append(inputs, &kio.ByteReader{
			Reader:            strings.NewReader(res[k]),
			SetAnnotations:    map[string]string{kioutil.PathAnnotation: k},
			DisableUnwrapping: true,
		})
	}
	return kio.Pipeline{
		Inputs: inputs,
		Outputs: []kio.Writer{kio.ByteWriter{
			Writer: w, KeepReaderAnnotations: true, Sort: true,
			WrappingKind: kio.ResourceListKind, WrappingAPIVersion: kio.ResourceListAPIVersion,
		}},
	}.Execute()
}

func isResourceFile(p string) bool {
	base := baseName(p)
	for _, m := range append([]string{revision.KptfileName, revisionMetadataFile}, kio.MatchAll...) {
		if ok, _ := filepath.Match(m, base); ok {
			return true
		}
	}
	return false
}

func baseName(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

func runPush(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "push PACKAGE_REVISION [DIR|-]", short: "Push new content to a draft package revision.", long: `
Reads the package from DIR, or a ResourceList from standard input, including
the .KptRevisionMetadata that pull wrote (its resourceVersion guards against
overwriting someone else's change). The package is rendered and saved; the
function results are printed on standard error.`}
	fs := c.newFlagSet("rpkg push")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("PACKAGE is a required positional argument")
	}
	if len(pos) > 2 {
		return usagef("too many arguments; PACKAGE and DIR are the only accepted positional arguments")
	}
	name := pos[0]
	var res map[string]string
	if len(pos) == 2 && pos[1] != "-" {
		res, err = readResourcesDir(c.abs(pos[1]))
	} else {
		res, err = c.readResourcesList(c.stdin)
	}
	if err != nil {
		return err
	}
	md, ok := res[revisionMetadataFile]
	if !ok {
		return fmt.Errorf("%q not found in PackageRevisionResources '%s/%s'\nuse \"cadctl rpkg pull\" to download the remote package metadata before pushing",
			revisionMetadataFile, c.namespace(), name)
	}
	var meta revisionMetadata
	if err := yaml.Unmarshal([]byte(md), &meta); err != nil {
		return fmt.Errorf("failed to parse %q: %w", revisionMetadataFile, err)
	}
	if meta.Kind != revisionMetadataKind {
		return fmt.Errorf("%q does not contain kind %q", revisionMetadataFile, revisionMetadataKind)
	}
	delete(res, revisionMetadataFile)
	cl, err := c.client()
	if err != nil {
		return err
	}
	prr := &porchapi.PackageRevisionResources{Spec: porchapi.PackageRevisionResourcesSpec{Resources: res}}
	prr.Name, prr.Namespace, prr.ResourceVersion = name, c.namespace(), meta.Metadata.ResourceVersion
	out, err := cl.UpdateResources(c.ctx, prr)
	if out != nil {
		c.printRenderStatus(out.Status.RenderStatus)
	}
	if err != nil {
		return err
	}
	c.stdoutf("%s pushed\n", name)
	return nil
}

// printRenderStatus prints the function results of a push as porchctl
// does.
func (c *cmdEnv) printRenderStatus(rs porchapi.RenderStatus) {
	if rs.Err != "" {
		c.stderrf("Package is updated, but failed to render the package.\nError: %s\n", rs.Err)
	}
	for _, r := range rs.Result.Items {
		id := r.Image
		if id == "" {
			id = r.ExecPath
		}
		c.stderrf("[RUNNING] %q\n", id)
		if r.ExitCode != 0 {
			c.stderrf("[FAIL] %q\n", id)
		} else {
			c.stderrf("[PASS] %q\n", id)
		}
		var results pipeline.Results
		for i := range r.Results {
			it := porchapi.RevisionResultItem(r.Results[i])
			results = append(results, &pipeline.Result{Message: it.Message, Severity: pipeline.Severity(it.Severity),
				ResourceRef: it.ResourceRef, Field: it.Field, File: it.File, Tags: it.Tags})
		}
		printResults(c.stderr, results, true)
	}
}

// readResourcesDir reads every regular file under dir (not .git) as
// Porch's resources map.
func readResourcesDir(dir string) (map[string]string, error) {
	res := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !utf8.Valid(data) {
			return fmt.Errorf("file %s is not a valid UTF-8 text file: the Porch API doesn't support binary files", p)
		}
		res[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// readResourcesList reads a ResourceList (within the default
// revision.YAMLLimits) and groups its items into files
// by their path annotations.
func (c *cmdEnv) readResourcesList(in io.Reader) (map[string]string, error) {
	nodes, err := c.readBoundedYAML("standard input", in, kio.ByteReader{PreserveSeqIndent: true, WrapBareSeqNode: true})
	if err != nil {
		return nil, fmt.Errorf("reading a ResourceList from standard input: %w", err)
	}
	byPath := map[string][]*kyaml.RNode{}
	for _, n := range nodes {
		p, _, _ := kioutil.GetFileAnnotations(n)
		if p == "" {
			ns := n.GetNamespace()
			if ns == "" {
				ns = "non-namespaced"
			}
			p = ns + "/" + n.GetName() + ".yaml"
		}
		byPath[p] = append(byPath[p], n)
	}
	res := map[string]string{}
	for _, p := range sortedKeys(byPath) {
		list := byPath[p]
		sort.SliceStable(list, func(i, j int) bool { return fileIndex(list[i]) < fileIndex(list[j]) })
		var buf bytes.Buffer
		w := kio.ByteWriter{Writer: &buf, ClearAnnotations: []string{
			kioutil.PathAnnotation, kioutil.IndexAnnotation, kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation,
		}}
		if err := w.Write(list); err != nil {
			return nil, err
		}
		res[p] = buf.String()
	}
	return res, nil
}

func fileIndex(n *kyaml.RNode) int {
	_, idx, _ := kioutil.GetFileAnnotations(n)
	var i int
	if _, err := fmt.Sscanf(idx, "%d", &i); err != nil {
		return 0
	}
	return i
}
