// Package porchtask is the creation task Porch writes in its commit
// annotations (the kpt: line in git, the task annotation of an OCI
// manifest): the porch.kpt.dev/v1alpha1 Task JSON, mapped to and from
// revision.Creation. Revisions are named as Porch names PackageRevisions:
// <repository>.<package path with / as .>.<workspace>.
package porchtask

import (
	"encoding/json"
	"strings"

	"github.com/configasdata/cad/revision"
)

// Porch's Task JSON.
type (
	porchTask struct {
		Type    string       `json:"type"`
		Init    *taskInit    `json:"init,omitempty"`
		Clone   *taskClone   `json:"clone,omitempty"`
		Edit    *taskEdit    `json:"edit,omitempty"`
		Upgrade *taskUpgrade `json:"upgrade,omitempty"`
	}
	taskInit struct {
		Description string   `json:"description,omitempty"`
		Keywords    []string `json:"keywords,omitempty"`
		Site        string   `json:"site,omitempty"`
	}
	taskClone struct {
		Upstream taskUpstream `json:"upstreamRef"`
		Strategy string       `json:"strategy,omitempty"`
	}
	taskUpstream struct {
		Type        string   `json:"type,omitempty"`
		Git         *taskGit `json:"git,omitempty"`
		UpstreamRef *taskRef `json:"upstreamRef,omitempty"`
	}
	taskGit struct {
		Repo      string  `json:"repo"`
		Ref       string  `json:"ref"`
		Directory string  `json:"directory"`
		SecretRef taskRef `json:"secretRef"`
	}
	taskEdit struct {
		Source *taskRef `json:"sourceRef,omitempty"`
	}
	taskUpgrade struct {
		OldUpstream taskRef `json:"oldUpstreamRef"`
		NewUpstream taskRef `json:"newUpstreamRef"`
		Local       taskRef `json:"localPackageRevisionRef"`
		Strategy    string  `json:"strategy,omitempty"`
	}
	taskRef struct {
		Name string `json:"name"`
	}
)

// PRName is Porch's PackageRevision name of k; "" when k lacks a part.
func PRName(k *revision.Key) string {
	if k == nil || k.Repository == "" || k.Package == "" || k.Workspace == "" {
		return ""
	}
	return k.Repository + "." + strings.ReplaceAll(k.Package, "/", ".") + "." + k.Workspace
}

// ParseName parses a PackageRevision name; nil when it is not one.
func ParseName(name string) *revision.Key {
	parts := strings.Split(name, ".")
	if len(parts) < 3 || strings.Contains(name, "..") {
		return nil
	}
	return &revision.Key{Repository: parts[0], Package: strings.Join(parts[1:len(parts)-1], "/"), Workspace: parts[len(parts)-1]}
}

func refOf(k *revision.Key) *taskRef {
	if n := PRName(k); n != "" {
		return &taskRef{Name: n}
	}
	return nil
}

func refName(k *revision.Key) taskRef { return taskRef{Name: PRName(k)} }

// Encode returns c as Porch's task JSON, nil for nil.
func Encode(c *revision.Creation) json.RawMessage {
	if c == nil {
		return nil
	}
	t := porchTask{Type: string(c.Op)}
	switch c.Op {
	case revision.CreatedByInit:
		t.Init = &taskInit{Description: c.Description, Keywords: c.Keywords, Site: c.Site}
	case revision.CreatedByClone:
		t.Clone = &taskClone{Strategy: string(c.Strategy)}
		if c.Git != nil {
			t.Clone.Upstream = taskUpstream{Type: "git", Git: &taskGit{Repo: c.Git.Repo, Ref: c.Git.Ref, Directory: c.Git.Directory}}
		} else {
			t.Clone.Upstream = taskUpstream{UpstreamRef: refOf(c.Source)}
		}
	case revision.CreatedByCopy:
		t.Edit = &taskEdit{Source: refOf(c.Source)}
	case revision.CreatedByUpgrade:
		t.Upgrade = &taskUpgrade{OldUpstream: refName(c.OldUpstream), NewUpstream: refName(c.NewUpstream), Local: refName(c.Local), Strategy: string(c.Strategy)}
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil
	}
	return b
}

// Decode returns the Creation a task JSON records: nil for none, one
// that does not parse, or a type that does not create a revision (Porch's
// render, push, ...).
func Decode(raw json.RawMessage) *revision.Creation {
	if len(raw) == 0 {
		return nil
	}
	var t porchTask
	if json.Unmarshal(raw, &t) != nil {
		return nil
	}
	c := &revision.Creation{Op: revision.CreationOp(t.Type)}
	switch {
	case c.Op == revision.CreatedByInit && t.Init != nil:
		c.Description, c.Keywords, c.Site = t.Init.Description, t.Init.Keywords, t.Init.Site
	case c.Op == revision.CreatedByInit:
	case c.Op == revision.CreatedByClone && t.Clone != nil:
		c.Strategy = revision.UpdateStrategy(t.Clone.Strategy)
		if g := t.Clone.Upstream.Git; g != nil {
			c.Git = &revision.GitUpstreamRef{Repo: g.Repo, Ref: g.Ref, Directory: g.Directory}
		} else if u := t.Clone.Upstream.UpstreamRef; u != nil {
			c.Source = ParseName(u.Name)
		}
	case c.Op == revision.CreatedByCopy && t.Edit != nil:
		if t.Edit.Source != nil {
			c.Source = ParseName(t.Edit.Source.Name)
		}
	case c.Op == revision.CreatedByUpgrade && t.Upgrade != nil:
		c.OldUpstream, c.NewUpstream, c.Local = ParseName(t.Upgrade.OldUpstream.Name), ParseName(t.Upgrade.NewUpstream.Name), ParseName(t.Upgrade.Local.Name)
		c.Strategy = revision.UpdateStrategy(t.Upgrade.Strategy)
	case c.Op == revision.CreatedByClone, c.Op == revision.CreatedByCopy, c.Op == revision.CreatedByUpgrade:
	default:
		return nil
	}
	return c
}
