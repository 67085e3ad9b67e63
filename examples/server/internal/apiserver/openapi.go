package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
)

// The OpenAPI v3 documents served are minimal: for each group version, the
// paths of its resources with their operations, each carrying the
// x-kubernetes-group-version-kind extension, and the fieldValidation query
// parameter on writes (dryRun is not offered: kubectl then refuses
// --dry-run=server itself). That is what kubectl reads to learn that
// the server validates fields itself (so it sends fieldValidation=Strict
// instead of validating against schemas). No component schemas are served,
// so kubectl apply computes JSON merge patches, which the server accepts.

// openAPIRoot is the /openapi/v3 discovery document.
func (s *Server) openAPIRoot(defs []*resourceDef) map[string]any {
	paths := map[string]any{}
	for _, gv := range groupVersionsOf(defs) {
		doc := s.openAPIDoc(defs, gv)
		data, _ := json.Marshal(doc)
		sum := sha256.Sum256(data)
		paths[gvPath(gv)] = map[string]any{"serverRelativeURL": "/openapi/v3/" + gvPath(gv) + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:]))}
	}
	return map[string]any{"paths": paths}
}

// groupVersionsOf lists "group/version" ("v1" for core) of the resources.
func groupVersionsOf(defs []*resourceDef) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range defs {
		gv := d.apiVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}

func gvPath(gv string) string {
	if !strings.Contains(gv, "/") {
		return "api/" + gv
	}
	return "apis/" + gv
}

// openAPIDoc is the OpenAPI v3 document of one group version.
func (s *Server) openAPIDoc(defs []*resourceDef, gv string) map[string]any {
	paths := map[string]any{}
	query := func(name string) map[string]any {
		return map[string]any{"name": name, "in": "query", "schema": map[string]any{"type": "string"}, "uniqueItems": true}
	}
	for _, d := range defs {
		if d.apiVersion() != gv {
			continue
		}
		gvk := map[string]any{"group": d.gr.group, "version": d.version, "kind": d.kind}
		op := func(id string, params ...map[string]any) map[string]any {
			o := map[string]any{
				"operationId":                     id + d.kind,
				"x-kubernetes-group-version-kind": gvk,
				"x-kubernetes-action":             id,
				"responses":                       map[string]any{"200": map[string]any{"description": "OK"}},
				"parameters":                      params,
			}
			return o
		}
		base := "/" + gvPath(gv) + "/"
		if d.namespaced {
			base += "namespaces/{namespace}/"
		}
		coll := base + d.gr.resource
		item := coll + "/{name}"
		collOps := map[string]any{"get": op("list", query("labelSelector"), query("fieldSelector"))}
		if hasVerb(d, "create") {
			collOps["post"] = op("post", query("fieldValidation"))
		}
		paths[coll] = collOps
		itemOps := map[string]any{"get": op("get")}
		if hasVerb(d, "update") {
			itemOps["put"] = op("put", query("fieldValidation"))
		}
		if hasVerb(d, "patch") {
			itemOps["patch"] = op("patch", query("fieldValidation"))
		}
		if hasVerb(d, "delete") {
			itemOps["delete"] = op("delete")
		}
		paths[item] = itemOps
		for name, sd := range d.subresources {
			ops := map[string]any{"get": op("get")}
			for _, v := range sd.verbs {
				switch v {
				case "update":
					ops["put"] = op("put", query("fieldValidation"))
				case "patch":
					ops["patch"] = op("patch", query("fieldValidation"))
				}
			}
			paths[item+"/"+name] = ops
		}
	}
	return map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]any{"title": "cad reference server", "version": gv},
		"paths":      paths,
		"components": map[string]any{},
	}
}

// serveOpenAPI serves /openapi/v3 and /openapi/v3/<gv path>; /openapi/v2 is
// not served (404), which clients take as "no schemas".
func (s *Server) serveOpenAPI(defs []*resourceDef) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3"), "/")
		if p == "" {
			writeJSON(w, http.StatusOK, s.openAPIRoot(defs))
			return
		}
		for _, gv := range groupVersionsOf(defs) {
			if gvPath(gv) == p {
				writeJSON(w, http.StatusOK, s.openAPIDoc(defs, gv))
				return
			}
		}
		writeJSON(w, http.StatusNotFound, newStatus(http.StatusNotFound, "NotFound", "the server could not find the requested resource").status)
	}
}
