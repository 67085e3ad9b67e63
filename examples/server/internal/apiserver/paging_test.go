package apiserver

import (
	"fmt"
	"net/url"
	"testing"
)

// Pages after the first come from the list the first page was cut from:
// a revision created between two pages does not appear (nor shift the
// pages), and all the pages together are that list.
func TestListPagesFromOneSnapshot(t *testing.T) {
	ts := startServer(t, "", nil)
	path := "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions"
	for i := range 5 {
		if code := ts.doJSON("POST", path, initPR(fmt.Sprintf("p%d", i), "ws"), nil); code != 201 {
			t.Fatalf("create: %d", code)
		}
	}
	type list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
			Continue        string `json:"continue"`
		} `json:"metadata"`
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	var all list
	ts.doJSON("GET", path, nil, &all)
	if len(all.Items) != 5 {
		t.Fatalf("listed %d", len(all.Items))
	}
	var names []string
	var page list
	ts.doJSON("GET", path+"?limit=2", nil, &page)
	for {
		for _, it := range page.Items {
			names = append(names, it.Metadata.Name)
		}
		if page.Metadata.ResourceVersion != all.Metadata.ResourceVersion {
			t.Fatalf("a page has resourceVersion %s, the list %s", page.Metadata.ResourceVersion, all.Metadata.ResourceVersion)
		}
		if len(names) == 2 {
			// A new revision between the pages.
			if code := ts.doJSON("POST", path, initPR("p9", "ws"), nil); code != 201 {
				t.Fatalf("create: %d", code)
			}
		}
		if page.Metadata.Continue == "" {
			break
		}
		cont := page.Metadata.Continue
		page = list{}
		ts.doJSON("GET", path+"?limit=2&continue="+url.QueryEscape(cont), nil, &page)
	}
	if len(names) != 5 {
		t.Fatalf("the pages held %v, want the 5 of the first list", names)
	}
	for i, it := range all.Items {
		if names[i] != it.Metadata.Name {
			t.Fatalf("pages %v, list %v", names, all.Items)
		}
	}
	// A new list sees the new revision.
	var after list
	ts.doJSON("GET", path, nil, &after)
	if len(after.Items) != 6 {
		t.Fatalf("a new list has %d", len(after.Items))
	}
}
