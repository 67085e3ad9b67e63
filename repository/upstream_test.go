package repository_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
)

func TestCredentialsKindAndFormatting(t *testing.T) {
	for _, tc := range []struct {
		c    repository.Credentials
		kind string
	}{
		{repository.Credentials{}, ""},
		{repository.Credentials{Username: "alice", Password: "s3cret"}, repository.CredentialsBasic},
		{repository.Credentials{Username: "alice"}, repository.CredentialsBasic},
		{repository.Credentials{BearerToken: "s3cret"}, repository.CredentialsBearer},
		{repository.Credentials{Username: "git", SSHPrivateKey: []byte("s3cret"), SSHPassphrase: "s3cret"}, repository.CredentialsSSH},
		{repository.Credentials{Password: "s3cret", BearerToken: "s3cret"}, repository.CredentialsMixed},
	} {
		if got := tc.c.Kind(); got != tc.kind {
			t.Errorf("%+v: kind %q, want %q", tc.c, got, tc.kind)
		}
		c := tc.c
		up := repository.GitUpstream{Repo: "https://example.com/r.git", Auth: &c}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			for _, v := range []any{c, &c, up, &up} {
				if s := fmt.Sprintf(verb, v); strings.Contains(s, "s3cret") || strings.Contains(s, "73336372657") {
					t.Errorf("%s of %T leaks a secret: %s", verb, v, s)
				}
			}
		}
	}
}
