package revision

import (
	"errors"
	"strings"
	"testing"
)

func TestKeyString(t *testing.T) {
	for _, tc := range []struct {
		key  Key
		want string
	}{
		{Key{Package: "p"}, "p"},
		{Key{Repository: "repo", Package: "net/istio", Workspace: "ws"}, "repo:net/istio@ws"},
		{Key{Repository: "repo", Package: "p", Workspace: "ws", Revision: 3}, "repo:p@ws/v3"},
		{Key{Package: "p", Revision: 1}, "p/v1"},
		{Key{Package: "p", Workspace: "main", Revision: Placeholder}, "p@main/placeholder"},
		{Key{Package: "p", Revision: -7}, "p"},
	} {
		if got := tc.key.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.key, got, tc.want)
		}
	}
	if !(Key{Revision: Placeholder}).IsPlaceholder() || (Key{Revision: 0}).IsPlaceholder() || (Key{Revision: 1}).IsPlaceholder() {
		t.Error("IsPlaceholder is wrong")
	}
}

func TestKeyMatches(t *testing.T) {
	rev := Key{Repository: "r", Package: "p", Workspace: "ws", Revision: 2}
	for _, tc := range []struct {
		sel  Key
		want bool
	}{
		{Key{Package: "p"}, true},
		{Key{Package: "p", Revision: 2}, true},
		{Key{Package: "p", Workspace: "ws"}, true},
		{Key{Repository: "r", Package: "p", Workspace: "ws", Revision: 2}, true},
		{Key{Package: "q"}, false},
		{Key{Package: ""}, false},
		{Key{Repository: "other", Package: "p"}, false},
		{Key{Package: "p", Workspace: "other"}, false},
		{Key{Package: "p", Revision: 3}, false},
		{Key{Package: "p", Revision: Placeholder}, false},
	} {
		if got := tc.sel.Matches(rev); got != tc.want {
			t.Errorf("%v.Matches(%v) = %v, want %v", tc.sel, rev, got, tc.want)
		}
	}
	placeholder := Key{Package: "p", Workspace: "main", Revision: Placeholder}
	if !(Key{Package: "p", Revision: Placeholder}).Matches(placeholder) {
		t.Error("placeholder selector does not match the placeholder")
	}
}

func wantKeyError(t *testing.T, err error, field string) {
	t.Helper()
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Field != field || !errors.Is(err, ErrInvalid) {
		t.Errorf("error %#v, want a *KeyError for field %q matching ErrInvalid", err, field)
	}
}

func TestKeyValidateNew(t *testing.T) {
	for _, k := range []Key{
		{Package: "p", Workspace: "ws"},
		{Package: "net/istio-1", Workspace: "v1-draft"},
		{Repository: "anything goes", Package: "a/b/c", Workspace: "0"},
		{Package: strings.Repeat("a", 63), Workspace: strings.Repeat("w", 63)},
	} {
		if err := k.ValidateNew(); err != nil {
			t.Errorf("%#v.ValidateNew() = %v", k, err)
		}
	}
	for _, tc := range []struct {
		key   Key
		field string
	}{
		{Key{Workspace: "ws"}, "package"},
		{Key{Package: "P", Workspace: "ws"}, "package"},
		{Key{Package: "a//b", Workspace: "ws"}, "package"},
		{Key{Package: "a/", Workspace: "ws"}, "package"},
		{Key{Package: "/a", Workspace: "ws"}, "package"},
		{Key{Package: "../a", Workspace: "ws"}, "package"},
		{Key{Package: "-a", Workspace: "ws"}, "package"},
		{Key{Package: "a-", Workspace: "ws"}, "package"},
		{Key{Package: "a_b", Workspace: "ws"}, "package"},
		{Key{Package: "a.b", Workspace: "ws"}, "package"},
		{Key{Package: strings.Repeat("a", 64), Workspace: "ws"}, "package"},
		{Key{Package: "p"}, "workspace"},
		{Key{Package: "p", Workspace: "WS"}, "workspace"},
		{Key{Package: "p", Workspace: "ws/x"}, "workspace"},
		{Key{Package: "p", Workspace: "-ws"}, "workspace"},
		{Key{Package: "p", Workspace: strings.Repeat("w", 64)}, "workspace"},
		{Key{Package: "p", Workspace: "ws", Revision: 1}, "revision"},
		{Key{Package: "p", Workspace: "ws", Revision: Placeholder}, "revision"},
	} {
		wantKeyError(t, tc.key.ValidateNew(), tc.field)
	}
}

func TestKeyValidateLookup(t *testing.T) {
	for _, k := range []Key{
		{Package: "p", Workspace: "ws"},
		{Package: "p", Revision: 1},
		{Package: "p", Revision: Placeholder},
		{Package: "Upper_Case/ok.for.lookup", Workspace: "x"},
	} {
		if err := k.ValidateLookup(); err != nil {
			t.Errorf("%#v.ValidateLookup() = %v", k, err)
		}
	}
	for _, tc := range []struct {
		key   Key
		field string
	}{
		{Key{Workspace: "ws"}, "package"},
		{Key{Package: "../p", Workspace: "ws"}, "package"},
		{Key{Package: "/p", Workspace: "ws"}, "package"},
		{Key{Package: "p/.git", Workspace: "ws"}, "package"},
		{Key{Package: "p"}, "workspace"},
		{Key{Package: "p", Revision: -2}, "revision"},
	} {
		wantKeyError(t, tc.key.ValidateLookup(), tc.field)
	}
}

func TestKeyErrorMessage(t *testing.T) {
	err := ValidateWorkspace("Bad")
	if want := `invalid workspace "Bad": must consist of lower-case letters, digits and '-'`; err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
