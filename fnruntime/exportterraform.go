package fnruntime

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/pipeline"
)

// exportTerraformKinds are, by minor line, the Config Connector kinds the
// catalog's export-terraform README lists as supported in that release
// (v0.1.0, v0.2.0 and v0.3.0; the README names its kinds only, not
// their API groups).
var exportTerraformKinds = map[string][]string{
	"v0.1": {"Folder", "Project", "IAMPartialPolicy", "IAMPolicy", "IAMPolicyMember"},
	"v0.2": {"Folder", "Project", "IAMPartialPolicy", "IAMPolicy", "IAMPolicyMember",
		"LoggingLogSink", "BigQueryDataset", "PubSubTopic", "StorageBucket", "IAMAuditConfig",
		"ComputeNetwork", "ComputeSubnetwork", "ComputeFirewall", "ComputeRouter", "ComputeRouterNAT",
		"ComputeAddress", "ServiceNetworkingConnection", "LoggingLogBucket"},
	"v0.3": {"Folder", "Project", "ComputeSharedVPCHostProject", "IAMPartialPolicy", "IAMPolicy", "IAMPolicyMember",
		"LoggingLogSink", "BigQueryDataset", "PubSubTopic", "StorageBucket", "IAMAuditConfig",
		"ComputeNetwork", "ComputeSubnetwork", "ComputeFirewall", "ComputeRoute", "ComputeRouter", "ComputeRouterNAT",
		"ComputeAddress", "ServiceNetworkingConnection", "LoggingLogBucket"},
}

const (
	// kccGroupSuffix ends the API group of every Config Connector kind.
	kccGroupSuffix = ".cnrm.cloud.google.com"
	// ignoreClusterlessAnnotation set to "true" leaves a resource out of
	// the export, as the README's "Skipping Resources" says.
	ignoreClusterlessAnnotation = "cnrm.cloud.google.com/ignore-clusterless"
	terraformFlavorAnnotation   = "blueprints.cloud.google.com/flavor"
	terraformSyntaxAnnotation   = "blueprints.cloud.google.com/syntax"
	// terraformConfigMapName and terraformConfigMapPath are the ConfigMap
	// the README and examples show, "terraform.yaml at the root of the
	// package".
	terraformConfigMapName = "terraform"
	terraformConfigMapPath = "terraform.yaml"
)

// exportTerraformFor returns the catalog's export-terraform of the given
// minor line ("v0.1", "v0.2", "v0.3"), as its README and its two example
// packages (export-terraform-imperative and export-terraform-advanced,
// the same in all three releases) document it.
//
// Every Config Connector resource (an API group ending in
// .cnrm.cloud.google.com) of a kind the line's README lists is exported,
// unless annotated cnrm.cloud.google.com/ignore-clusterless: "true";
// other resources are ignored, as "searches for supported KCC resources"
// says. The Terraform goes into one ConfigMap named terraform, written to
// terraform.yaml (an earlier one of that name and flavor is replaced in
// its file), annotated local-config and with the blueprint syntax (hcl)
// and flavor (terraform), whose keys are the module's files: README.md
// and versions.tf (with the README's provider_meta attribution) always,
// folders.tf for Folders, iam.tf for IAMPolicyMembers, variables.tf with
// the org_id variable when a Folder's parent is an organization.
//
// The examples show the Terraform of Folder (parent an organization, by
// org_id, or a folder of the package) and of IAMPolicyMember on an
// Organization or a Folder (the Cloud Foundation Toolkit's IAM modules,
// bindings by role). The other kinds the README lists have no documented
// Terraform: a resource of one of them, or one of these kinds in a shape
// the examples do not show, is an error result naming it, so the step
// fails rather than export part of the package. A successful export
// reports nothing, as the examples' results show.
func exportTerraformFor(line string) func(context.Context, *pipeline.ResourceList) error {
	supported := map[string]bool{}
	for _, k := range exportTerraformKinds[line] {
		supported[k] = true
	}
	return func(ctx context.Context, rl *pipeline.ResourceList) error {
		return exportTerraform(ctx, rl, supported)
	}
}

// tfExport gathers what one run converts.
type tfExport struct {
	results  []*pipeline.Result
	folders  []*yaml.RNode
	byName   map[string]*yaml.RNode // the package's exported Folders, by metadata.name
	orgID    string                 // the organization of the Folders' org_id variable
	orgFrom  *yaml.RNode            // the Folder that set orgID
	targets  []*iamTarget           // in order of first appearance
	byTarget map[string]*iamTarget
}

// iamTarget is one IAM module: the resource its members are granted on.
type iamTarget struct {
	kind     string // "Organization" or "Folder"
	id       string // the organization id, "folders/<id>", or the Folder's expression
	name     string // a package Folder's metadata.name; empty for an external resource
	roles    map[string][]string
	seen     map[string]bool // role + "\x00" + member
	external bool
}

func exportTerraform(ctx context.Context, rl *pipeline.ResourceList, supported map[string]bool) error {
	x := &tfExport{byName: map[string]*yaml.RNode{}, byTarget: map[string]*iamTarget{}}
	var exported []*yaml.RNode
	var existing *yaml.RNode
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if isTerraformConfigMap(it) && existing == nil {
			existing = it
			continue
		}
		g, _ := groupVersion(it.GetApiVersion())
		if !strings.HasSuffix(g, kccGroupSuffix) || !supported[it.GetKind()] {
			continue
		}
		if strings.EqualFold(it.GetAnnotations()[ignoreClusterlessAnnotation], "true") {
			continue
		}
		exported = append(exported, it)
		if it.GetKind() == "Folder" {
			x.byName[it.GetName()] = it
		}
	}
	for _, it := range exported {
		switch it.GetKind() {
		case "Folder":
			x.folder(it)
		case "IAMPolicyMember":
			x.policyMember(it)
		default:
			x.fail(it, fmt.Sprintf("not exported: cad's export-terraform supports Folder and IAMPolicyMember, the kinds whose Terraform the function's README and examples show; the README lists %s too but documents no Terraform for it, and cad does not guess one (the catalog's own image exports it)", it.GetKind()))
		}
	}
	if len(x.results) > 0 {
		rl.Results = append(rl.Results, x.results...)
		return nil
	}
	data := map[string]string{"README.md": terraformReadme, "versions.tf": terraformVersions}
	if tf := x.foldersTF(); tf != "" {
		data["folders.tf"] = tf
	}
	if tf, err := x.iamTF(); err != nil {
		rl.Results = append(rl.Results, errorResult("export-terraform: "+err.Error()))
		return nil
	} else if tf != "" {
		data["iam.tf"] = tf
	}
	if x.orgID != "" {
		data["variables.tf"] = fmt.Sprintf(terraformVariables, hclString(x.orgID))
	}
	p := terraformConfigMapPath
	if existing != nil && itemPath(existing) != "" {
		p = itemPath(existing)
	}
	cm, err := terraformConfigMap(data, p)
	if err != nil {
		return err
	}
	out := make([]*yaml.RNode, 0, len(rl.Items)+1)
	for _, it := range rl.Items {
		if it == existing {
			it = cm
			existing = nil
			cm = nil
		}
		out = append(out, it)
	}
	if cm != nil {
		out = append(out, cm)
	}
	rl.Items = out
	return nil
}

// isTerraformConfigMap reports an earlier output of the function: a
// ConfigMap named terraform with the terraform flavor annotation.
func isTerraformConfigMap(n *yaml.RNode) bool {
	return n.GetApiVersion() == "v1" && n.GetKind() == "ConfigMap" && n.GetName() == terraformConfigMapName &&
		n.GetAnnotations()[terraformFlavorAnnotation] == "terraform"
}

func (x *tfExport) fail(it *yaml.RNode, msg string) {
	r := errorResult(fmt.Sprintf("%s %s: %s", it.GetKind(), it.GetName(), msg))
	r.ResourceRef = &pipeline.ResourceRef{APIVersion: it.GetApiVersion(), Kind: it.GetKind(), Name: it.GetName(), Namespace: it.GetNamespace()}
	if p := itemPath(it); p != "" {
		r.File = &pipeline.File{Path: p}
	}
	x.results = append(x.results, r)
}

// folder checks a Folder and records it (and its organization) for
// folders.tf.
func (x *tfExport) folder(it *yaml.RNode) {
	if org, ok := nestedString(it, "spec", "organizationRef", "external"); ok && org != "" {
		org = strings.TrimPrefix(org, "organizations/")
		if x.orgID != "" && x.orgID != org {
			x.fail(it, fmt.Sprintf("its organization %s is not %s, that of Folder %s: the export has one org_id variable", org, x.orgID, x.orgFrom.GetName()))
			return
		}
		x.orgID, x.orgFrom = org, it
	} else if ref, ok := nestedString(it, "spec", "folderRef", "name"); ok && ref != "" {
		if x.byName[ref] == nil {
			x.fail(it, fmt.Sprintf("its folderRef names %s, which is not an exported Folder of the package", ref))
			return
		}
	} else if ext, ok := nestedString(it, "spec", "folderRef", "external"); !ok || ext == "" {
		x.fail(it, "it has no organizationRef.external, folderRef.name or folderRef.external")
		return
	}
	x.folders = append(x.folders, it)
}

// foldersTF returns folders.tf: one google_folder per Folder, by name,
// as the imperative example shows.
func (x *tfExport) foldersTF() string {
	if len(x.folders) == 0 {
		return ""
	}
	fs := append([]*yaml.RNode(nil), x.folders...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].GetName() < fs[j].GetName() })
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString("\n")
		}
		display, _ := nestedString(f, "spec", "displayName")
		if display == "" {
			display = f.GetName()
		}
		var parent string
		if org, _ := nestedString(f, "spec", "organizationRef", "external"); org != "" {
			parent = `"organizations/${var.org_id}"`
		} else if ref, ok := nestedString(f, "spec", "folderRef", "name"); ok && ref != "" {
			parent = "google_folder." + tfIdent(ref) + ".name"
		} else {
			ext, _ := nestedString(f, "spec", "folderRef", "external")
			parent = hclString("folders/" + strings.TrimPrefix(ext, "folders/"))
		}
		fmt.Fprintf(&b, "resource \"google_folder\" %s {\n  display_name = %s\n  parent       = %s\n}\n",
			hclString(tfIdent(f.GetName())), hclString(display), parent)
	}
	return b.String()
}

// policyMember records an IAMPolicyMember's binding on its resource.
func (x *tfExport) policyMember(it *yaml.RNode) {
	role, _ := nestedString(it, "spec", "role")
	member, _ := nestedString(it, "spec", "member")
	if role == "" || member == "" {
		x.fail(it, "spec.role and spec.member are required (memberFrom has no documented Terraform)")
		return
	}
	kind, _ := nestedString(it, "spec", "resourceRef", "kind")
	ext, _ := nestedString(it, "spec", "resourceRef", "external")
	name, _ := nestedString(it, "spec", "resourceRef", "name")
	var key string
	t := &iamTarget{kind: kind, roles: map[string][]string{}, seen: map[string]bool{}}
	switch {
	case kind == "Organization" && ext != "":
		t.id = hclString(strings.TrimPrefix(ext, "organizations/"))
		t.external = true
	case kind == "Folder" && ext != "":
		t.id = hclString("folders/" + strings.TrimPrefix(ext, "folders/"))
		t.external = true
	case kind == "Folder" && name != "":
		if x.byName[name] == nil {
			x.fail(it, fmt.Sprintf("its resourceRef names Folder %s, which is not an exported Folder of the package", name))
			return
		}
		t.id = "google_folder." + tfIdent(name) + ".name"
		t.name = name
	default:
		x.fail(it, fmt.Sprintf("its resourceRef (kind %q) is not an Organization or Folder by external id or a Folder of the package by name: the function's documentation shows no other", kind))
		return
	}
	key = t.kind + "\x00" + t.id
	if old, ok := x.byTarget[key]; ok {
		t = old
	} else {
		x.byTarget[key] = t
		x.targets = append(x.targets, t)
	}
	if k := role + "\x00" + member; !t.seen[k] {
		t.seen[k] = true
		t.roles[role] = append(t.roles[role], member)
	}
}

// iamTF returns iam.tf: a Cloud Foundation Toolkit IAM module per
// organization, then per folder, in order of first appearance, each with
// its bindings by role (roles sorted, members in input order), laid out
// as the advanced example shows it.
func (x *tfExport) iamTF() (string, error) {
	var orgs, folders []*iamTarget
	for _, t := range x.targets {
		if t.kind == "Organization" {
			orgs = append(orgs, t)
		} else {
			folders = append(folders, t)
		}
	}
	var b strings.Builder
	names := map[string]bool{}
	external := 0
	for i, t := range append(orgs, folders...) {
		var module, source, field string
		switch {
		case t.kind == "Organization":
			module, source, field = "organization-iam", "organizations_iam", "organizations"
			if len(orgs) > 1 {
				module = fmt.Sprintf("organization-%d-iam", i+1)
			}
		case t.external:
			external++
			module, source, field = fmt.Sprintf("folder-%d-iam", external), "folders_iam", "folders"
		default:
			module, source, field = tfIdent(t.name)+"-iam", "folders_iam", "folders"
		}
		if names[module] {
			return "", fmt.Errorf("two IAM modules would be named %s", module)
		}
		names[module] = true
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "module %s {\n  source  = \"terraform-google-modules/iam/google//modules/%s\"\n  version = \"~> 7.4\"\n\n  %s = [%s]\n\n  bindings = {\n",
			hclString(module), source, field, t.id)
		roles := make([]string, 0, len(t.roles))
		for r := range t.roles {
			roles = append(roles, r)
		}
		sort.Strings(roles)
		for _, r := range roles {
			fmt.Fprintf(&b, "    \n    %s = [\n", hclString(r))
			for _, m := range t.roles[r] {
				fmt.Fprintf(&b, "      %s,\n", hclString(m))
			}
			b.WriteString("    ]\n")
		}
		b.WriteString("    \n  }\n}\n")
	}
	return b.String(), nil
}

// terraformConfigMap builds the output ConfigMap with data's keys sorted.
func terraformConfigMap(data map[string]string, p string) (*yaml.RNode, error) {
	cm := yaml.NewMapRNode(nil)
	cm.SetApiVersion("v1")
	cm.SetKind("ConfigMap")
	if err := cm.SetName(terraformConfigMapName); err != nil {
		return nil, err
	}
	// Plain scalars, as the examples print them (yaml.SetAnnotation
	// would single-quote them).
	ann, err := cm.Pipe(yaml.LookupCreate(yaml.MappingNode, "metadata", "annotations"))
	if err != nil {
		return nil, err
	}
	for _, a := range [][2]string{
		{terraformFlavorAnnotation, "terraform"},
		{terraformSyntaxAnnotation, "hcl"},
		{pipeline.LocalConfigAnnotation, "true"},
		{kioutil.PathAnnotation, p},
	} {
		if err := ann.PipeE(yaml.SetField(a[0], yaml.NewStringRNode(a[1]))); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d, err := cm.Pipe(yaml.LookupCreate(yaml.MappingNode, "data"))
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if err := d.PipeE(yaml.SetField(k, yaml.NewStringRNode(data[k]))); err != nil {
			return nil, err
		}
	}
	return cm, nil
}

// hclString quotes s as an HCL string literal: quotes and backslashes
// escaped, control characters as escapes, and template sequences ("${",
// "%{") doubled so they stay literal.
func hclString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		case (c == '$' || c == '%') && i+1 < len(s) && s[i+1] == '{':
			b.WriteByte(c)
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tfIdent makes a Kubernetes name a Terraform identifier (letters,
// digits, underscores and hyphens, not starting with a digit): other
// characters (the dots a name may have) become underscores and a leading
// digit gets an underscore before it. The examples' names are identifiers
// already and stay as they are.
func tfIdent(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

// terraformVariables is variables.tf, with the organization id as the
// default of org_id (%s, quoted).
const terraformVariables = `variable "org_id" {
  description = "The organization id for the associated resources"
  type        = string
  default     = %s
}
`

// terraformVersions is versions.tf with the provider_meta attribution the
// README documents (module_name .../exported-krm/v0.1.0 in every release).
const terraformVersions = `terraform {
  required_version = ">=0.13"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 4.0.0"
    }
  }
  provider_meta "google" {
    module_name = "blueprints/terraform/exported-krm/v0.1.0"
  }
}
`

// terraformReadme is the README.md of the exported module. Its text is
// cad's own: the catalog function writes a README of its own words, which
// cad does not reproduce (the one documented difference in the output).
const terraformReadme = "# Terraform exported from Config Connector\n" +
	"\n" +
	"The Terraform files beside this README were generated by cad's\n" +
	"export-terraform function from the Config Connector resources of a kpt\n" +
	"package: Folders become google_folder resources and IAMPolicyMembers\n" +
	"become IAM module blocks.\n" +
	"\n" +
	"## Applying it\n" +
	"\n" +
	"1. `terraform init`\n" +
	"1. `terraform plan`, and read the plan\n" +
	"1. `terraform apply`\n" +
	"\n" +
	"The account that applies it needs the right to create folders and to set\n" +
	"IAM policy in the organization (the org_id variable) it names.\n"
