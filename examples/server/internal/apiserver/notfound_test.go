package apiserver

import (
	"errors"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/configasdata/cad/examples/server/internal/store"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// TestOneNotFoundSentinel: the store's "not found" is
// repository.ErrNotFound (one sentinel for cad), and toAPIError still
// words the two kinds apart: a store error naming the object gives the
// plain Kubernetes message, a repository's adds its own words.
func TestOneNotFoundSentinel(t *testing.T) {
	if store.ErrNotFound != repository.ErrNotFound {
		t.Fatal("store.ErrNotFound is not repository.ErrNotFound")
	}
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, serr := st.Get(resRepositories, "default", "nope")
	var nf *store.NotFoundError
	if !errors.Is(serr, repository.ErrNotFound) || !errors.As(serr, &nf) || nf.Name != "nope" {
		t.Fatalf("store Get: %v, want a *store.NotFoundError matching repository.ErrNotFound", serr)
	}
	rerr := repository.Errorf("open", "nope", revision.Key{}, repository.ErrNotFound, "no repository %q in namespace %q", "nope", "default")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"store", serr, `repositories.config.porch.kpt.dev "nope" not found`},
		{"repository", rerr, `repositories.config.porch.kpt.dev "nope" not found: ` + rerr.Error()},
	} {
		e := toAPIError(grRepositories, "nope", tc.err)
		st := e.(apierrors.APIStatus).Status()
		if st.Code != http.StatusNotFound || st.Message != tc.want {
			t.Errorf("%s: %d %q, want 404 %q", tc.name, st.Code, st.Message, tc.want)
		}
		if !errors.Is(e, repository.ErrNotFound) {
			t.Errorf("%s: the API error does not match repository.ErrNotFound", tc.name)
		}
	}
}
