package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	restclient "k8s.io/client-go/rest"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	porchv1alpha1 "github.com/configasdata/cad/api/porch/v1alpha1"
	"github.com/configasdata/cad/examples/server/internal/openapi"
	"github.com/configasdata/cad/revision"
)

// The server is k8s.io/apiserver's generic API server: its handlers
// decode, encode, negotiate content types (JSON, YAML, protobuf for core
// kinds, Tables), apply patches of every type (JSON, merge, strategic
// merge, server-side apply with managedFields), run dry runs, serve
// discovery and OpenAPI v2 and v3, authenticate, authorize, bound requests
// and watches, and shape every error as Kubernetes does. cad's part is the
// storage of each resource (genericstorage.go): the engine for package
// revisions, the embedded store for the other objects.

// newScheme returns the scheme and codecs of the served kinds. Each kind is
// registered in its external version and, as the same Go type, in its
// group's internal version: the server has no internal types, so the
// conversion between the two is the identity.
func newScheme() (*runtime.Scheme, serializer.CodecFactory) {
	sc := runtime.NewScheme()
	add := func(gv schema.GroupVersion, objs ...runtime.Object) {
		sc.AddKnownTypes(gv, objs...)
		sc.AddKnownTypes(schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}, objs...)
		metav1.AddToGroupVersion(sc, gv)
	}
	add(porchv1alpha1.SchemeGroupVersion,
		&porchv1alpha1.PackageRevision{}, &porchv1alpha1.PackageRevisionList{},
		&porchv1alpha1.PackageRevisionResources{}, &porchv1alpha1.PackageRevisionResourcesList{})
	add(configv1alpha1.SchemeGroupVersion,
		&configv1alpha1.Repository{}, &configv1alpha1.RepositoryList{},
		&configv1alpha1.PackageVariant{}, &configv1alpha1.PackageVariantList{})
	add(configv1alpha2.SchemeGroupVersion,
		&configv1alpha2.PackageVariantSet{}, &configv1alpha2.PackageVariantSetList{})
	add(corev1.SchemeGroupVersion,
		&corev1.Namespace{}, &corev1.NamespaceList{}, &corev1.Secret{}, &corev1.SecretList{})
	unversioned := schema.GroupVersion{Version: "v1"}
	sc.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
		&metav1.APIGroup{}, &metav1.APIResourceList{})
	must(sc.SetVersionPriority(porchv1alpha1.SchemeGroupVersion))
	must(sc.SetVersionPriority(configv1alpha2.SchemeGroupVersion, configv1alpha1.SchemeGroupVersion))
	must(sc.SetVersionPriority(corev1.SchemeGroupVersion))
	return sc, serializer.NewCodecFactory(sc)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// genericServer builds the generic API server over the server's
// resources (each resourceDef's storage, installed by group) and returns
// it; New prepares it and serves its handler.
func (s *Server) genericServer() (*genericapiserver.GenericAPIServer, error) {
	sc, codecs := newScheme()
	s.scheme, s.codecs = sc, codecs
	defs := s.resourceDefs()
	s.prDef = nil
	for _, d := range defs {
		if d.gr == grPackageRevisions {
			s.prDef = d
		}
		err := sc.AddFieldLabelConversionFunc(d.gvk(), func(label, value string) (string, string, error) {
			if label == "metadata.name" || label == "metadata.namespace" {
				return label, value, nil
			}
			if d.checkFields == nil {
				return "", "", fmt.Errorf("field label not supported: %s", label)
			}
			// The operators are checked with the whole selector (List,
			// Watch); here the label.
			if err := d.checkFields(fields.OneTermEqualSelector(label, "x")); err != nil {
				return "", "", err
			}
			return label, value, nil
		})
		if err != nil {
			return nil, err
		}
	}

	cfg := genericapiserver.NewConfig(codecs)
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	cfg.LoopbackClientConfig = &restclient.Config{Host: "http://127.0.0.1"}
	cfg.ExternalAddress = "localhost:443" // served behind the caller's listener
	cfg.RequestTimeout = s.opts.RequestTimeout
	cfg.MinRequestTimeout = int(s.opts.MaxWatch.Seconds())
	cfg.MaxRequestBodyBytes = s.opts.MaxBodyBytes
	cfg.EnableProfiling = false
	cfg.EnableMetrics = false
	cfg.EnableIndex = false
	namer := openapinamer.NewDefinitionNamer(sc)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "cad"
	cfg.OpenAPIConfig.Info.Version = "v1alpha1"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "cad"
	cfg.OpenAPIV3Config.Info.Version = "v1alpha1"
	cfg.Authentication.Authenticator = authenticator.RequestFunc(s.authenticateGeneric)
	cfg.Authorization.Authorizer = authorizer.AuthorizerFunc(s.authorizeGeneric)
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		// The pool scope is innermost: apiserver's timeout filter may answer
		// a slow request while its handler goes on, and the handler's
		// repositories must stay open until the handler itself returns.
		return genericapiserver.DefaultBuildHandlerChain(s.withCadUser(s.boundYAML(withRepoScope(s.pool, s.cachedLists(h)))), c)
	}

	gs, err := cfg.Complete(nil).New("cad", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	groups := map[string]*genericapiserver.APIGroupInfo{}
	var order []string
	for _, d := range defs {
		g, ok := groups[d.gr.Group]
		if !ok {
			info := genericapiserver.NewDefaultAPIGroupInfo(d.gr.Group, sc, metav1.ParameterCodec, codecs)
			g = &info
			groups[d.gr.Group] = g
			order = append(order, d.gr.Group)
		}
		m := g.VersionedResourcesStorageMap[d.version]
		if m == nil {
			m = map[string]rest.Storage{}
			g.VersionedResourcesStorageMap[d.version] = m
		}
		m[d.gr.Resource] = newResourceStorage(s, d, sc)
		for name, sd := range d.subresources {
			m[d.gr.Resource+"/"+name] = newSubresourceStorage(s, d, sd, sc)
		}
	}
	for _, group := range order {
		g := groups[group]
		if group == "" {
			err = gs.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, g)
		} else {
			err = gs.InstallAPIGroup(g)
		}
		if err != nil {
			return nil, fmt.Errorf("installing API group %q: %w", group, err)
		}
	}
	return gs, nil
}

// publicPath reports whether path is served to anyone, as kube-apiserver
// serves it to unauthenticated users.
func publicPath(path string) bool {
	return publicPaths[path] || strings.HasPrefix(path, "/readyz/") || strings.HasPrefix(path, "/livez/") ||
		strings.HasPrefix(path, "/healthz/")
}

// anonymous is the user of a request without credentials.
var anonymous = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}

// authenticateGeneric authenticates a request with the server's own
// means (request header, tokens, client certificates). Without
// authentication configured every request is anonymous; with it, a request
// without credentials is anonymous only on the public paths.
func (s *Server) authenticateGeneric(r *http.Request) (*authenticator.Response, bool, error) {
	if !s.authEnabled() {
		return &authenticator.Response{User: anonymous}, true, nil
	}
	u, err := s.authenticateRequest(r)
	if err != nil {
		s.log.Debug("authentication failed", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		return nil, false, err
	}
	if u == nil {
		if publicPath(r.URL.Path) {
			return &authenticator.Response{User: anonymous}, true, nil
		}
		return nil, false, nil
	}
	// A new slice: u.Groups may share its array with the token file's
	// user, which every request of that user reads.
	groups := append(slices.Clip(u.Groups), user.AllAuthenticated)
	return &authenticator.Response{User: &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: groups}}, true, nil
}

// cadUser is the server's User of an authenticated request's user.
func (s *Server) cadUser(ui user.Info) *User {
	if !s.authEnabled() || ui == nil || ui.GetName() == user.Anonymous {
		return nil
	}
	var groups []string
	for _, g := range ui.GetGroups() {
		if g != user.AllAuthenticated {
			groups = append(groups, g)
		}
	}
	return &User{Name: ui.GetName(), UID: ui.GetUID(), Groups: groups, external: s.opts.Authorizer != nil}
}

// withCadUser puts the request's User in its context, for the checks of
// the storage that depend on the object (a revision's lifecycle, its
// authors).
func (s *Server) withCadUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ui, _ := genericapirequest.UserFrom(r.Context())
		if u := s.cadUser(ui); u != nil {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, u))
		}
		h.ServeHTTP(w, r)
	})
}

// authorizeGeneric decides a request: public paths and, without
// authentication, everything is allowed; discovery and OpenAPI need a
// role; resource requests need one of the roles rolesFor names, or the
// answer of Options.Authorizer.
func (s *Server) authorizeGeneric(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if !s.authEnabled() {
		return authorizer.DecisionAllow, "", nil
	}
	if !a.IsResourceRequest() && publicPath(a.GetPath()) {
		return authorizer.DecisionAllow, "", nil
	}
	u := s.cadUser(a.GetUser())
	if u == nil {
		return authorizer.DecisionDeny, "anonymous requests are not allowed", nil
	}
	if s.opts.Authorizer != nil {
		if !a.IsResourceRequest() {
			return authorizer.DecisionAllow, "", nil
		}
		return s.opts.Authorizer.Authorize(ctx, a)
	}
	if !u.Has(RoleViewer) {
		return authorizer.DecisionDeny, fmt.Sprintf("it has no role on this server: it needs one of the groups %s", roleGroups()), nil
	}
	if !a.IsResourceRequest() {
		return authorizer.DecisionAllow, "", nil
	}
	roles := rolesFor(a.GetVerb(), a.GetResource(), a.GetSubresource())
	for _, r := range roles {
		if u.Has(r) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	var names []string
	for _, r := range roles {
		names = append(names, string(r))
	}
	return authorizer.DecisionDeny, fmt.Sprintf("it needs the role %s", strings.Join(names, " or ")), nil
}

// rolesFor returns the roles of which one may make a request: reads need
// any role; writes the roles that may do some write of the resource (the
// storage checks further what depends on the object, a revision's
// lifecycle).
func rolesFor(verb, resource, sub string) []Role {
	if resource == "secrets" {
		// Credentials: only an admin reads or writes them.
		return []Role{RoleAdmin}
	}
	switch verb {
	case "get", "list", "watch":
		return []Role{RoleViewer}
	}
	switch resource {
	case "namespaces", "repositories":
		return []Role{RoleAdmin}
	case "packagevariants", "packagevariantsets", "packagerevisionresources":
		return []Role{RoleEditor}
	case "packagerevisions":
		switch {
		case sub != "":
			return []Role{RoleApprover}
		case verb == "create":
			return []Role{RoleEditor}
		}
		return []Role{RoleEditor, RoleApprover}
	}
	return []Role{RoleAdmin}
}

// yamlMediaTypes are the media types of request bodies written in YAML.
var yamlMediaTypes = map[string]bool{
	"application/yaml": true, "application/x-yaml": true, "text/yaml": true, "application/apply-patch+yaml": true,
}

// boundYAML checks a YAML request body against Options.YAMLLimits before
// the generic server decodes it: an alias bomb, a deep or huge document
// is refused with 400 naming the bound, before any decoder expands it.
func (s *Server) boundYAML(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if r.Body == nil || r.Body == http.NoBody || !yamlMediaTypes[mt] {
			h.ServeHTTP(w, r)
			return
		}
		data, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxBodyBytes+1))
		r.Body.Close()
		switch {
		case err != nil:
			err = errBadRequest("reading the request body: %v", err)
		case int64(len(data)) > s.opts.MaxBodyBytes:
			err = newStatus(http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
				fmt.Sprintf("the request body is larger than the limit of %d bytes", s.opts.MaxBodyBytes))
		default:
			if err = revision.CheckYAML(r.Context(), "request body", data, s.opts.YAMLLimits); err != nil {
				err = errBadRequest("%v", err)
			}
		}
		if err != nil {
			responsewriters.ErrorNegotiated(err, s.codecs, schema.GroupVersion{}, w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.ContentLength = int64(len(data))
		h.ServeHTTP(w, r)
	})
}

// cachedLists answers a JSON (or Table) list of PackageRevisions from the
// list cache (listcache.go): a list whose repositories did not change
// since an identical request is written as it was, without being built
// or encoded again. Every other request, and a list whose options the
// cache does not parse, goes to the generic server. It runs after
// authentication and authorization.
func (s *Server) cachedLists(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(r.Context())
		if !ok || s.prDef == nil || !info.IsResourceRequest || info.Verb != "list" || info.Resource != grPackageRevisions.Resource ||
			info.APIGroup != grPackageRevisions.Group || info.APIVersion != s.prDef.version || info.Subresource != "" || !acceptsJSON(r) {
			h.ServeHTTP(w, r)
			return
		}
		var o metainternalversion.ListOptions
		err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &o)
		lo := listOptionsOf(&o)
		if err != nil || lo.watch || s.prDef.checkFields(lo.field) != nil {
			h.ServeHTTP(w, r) // the generic server answers
			return
		}
		s.serveList(r.Context(), w, r, &request{def: s.prDef, ns: info.Namespace}, lo)
	})
}

// acceptsJSON reports whether r takes a JSON response: plain JSON or a
// Table as JSON first, or anything.
func acceptsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	if a == "" || wantsTable(r) {
		return true
	}
	first, _, _ := strings.Cut(a, ",")
	mt, params, err := mime.ParseMediaType(strings.TrimSpace(first))
	return err == nil && (mt == "application/json" && params["as"] == "" || mt == "*/*")
}

// liftWatchDeadlines clears the read and write deadlines of the
// connection of a watch, which lasts longer than the http.Server's
// timeouts allow any other request (the generic server bounds a watch by
// its own timeout).
func liftWatchDeadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query().Get("watch"); q == "true" || q == "1" || strings.Contains(r.URL.Path, "/watch/") {
			rc := http.NewResponseController(w)
			_ = rc.SetWriteDeadline(time.Time{})
			_ = rc.SetReadDeadline(time.Time{})
		}
		h.ServeHTTP(w, r)
	})
}
