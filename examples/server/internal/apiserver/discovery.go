package apiserver

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// groupVersions returns the versions served for each group, in order of
// preference, and the groups in order.
func groupVersions(defs []*resourceDef) (map[string][]string, []string) {
	vs := map[string][]string{}
	var groups []string
	for _, d := range defs {
		if d.gr.group == "" {
			continue
		}
		if _, ok := vs[d.gr.group]; !ok {
			groups = append(groups, d.gr.group)
		}
		found := false
		for _, v := range vs[d.gr.group] {
			found = found || v == d.version
		}
		if !found {
			vs[d.gr.group] = append(vs[d.gr.group], d.version)
		}
	}
	for _, g := range groups {
		sort.Strings(vs[g]) // v1alpha1 before v1alpha2: the first is preferred
	}
	return vs, groups
}

func apiGroupOf(group string, versions []string) metav1.APIGroup {
	g := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: group}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

// groupList is the /apis document.
func groupList(defs []*resourceDef) metav1.APIGroupList {
	vs, groups := groupVersions(defs)
	l := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	for _, g := range groups {
		l.Groups = append(l.Groups, apiGroupOf(g, vs[g]))
	}
	return l
}

// apiGroup is the /apis/<group> document.
func apiGroup(defs []*resourceDef, group string) (metav1.APIGroup, bool) {
	vs, _ := groupVersions(defs)
	if len(vs[group]) == 0 {
		return metav1.APIGroup{}, false
	}
	return apiGroupOf(group, vs[group]), true
}

// resourceList is the /apis/<group>/<version> (or /api/v1) document.
func resourceList(defs []*resourceDef, group, version string) (metav1.APIResourceList, bool) {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	l := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv,
		APIResources: []metav1.APIResource{}}
	found := false
	for _, d := range defs {
		if d.gr.group != group || d.version != version {
			continue
		}
		found = true
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name:         d.gr.resource,
			SingularName: d.singular,
			Namespaced:   d.namespaced,
			Kind:         d.kind,
			Verbs:        d.verbs,
			ShortNames:   d.shortNames,
			Categories:   d.categories,
		})
		subs := make([]string, 0, len(d.subresources))
		for name := range d.subresources {
			subs = append(subs, name)
		}
		sort.Strings(subs)
		for _, name := range subs {
			l.APIResources = append(l.APIResources, metav1.APIResource{
				Name:       d.gr.resource + "/" + name,
				Namespaced: d.namespaced,
				Kind:       d.kind,
				Verbs:      d.subresources[name].verbs,
			})
		}
	}
	return l, found
}
