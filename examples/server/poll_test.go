package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/examples/server/internal/apiserver"
)

// --poll sets how often repositories are read; without it, cluster mode
// (remote repositories, a fetch per poll) polls every 10 s, not every
// second.
func TestPollInterval(t *testing.T) {
	for _, tc := range []struct {
		flag    time.Duration
		cluster bool
		want    time.Duration
	}{
		{0, false, apiserver.DefaultGitPollInterval},
		{0, true, 10 * time.Second},
		{3 * time.Second, true, 3 * time.Second},
		{250 * time.Millisecond, false, 250 * time.Millisecond},
	} {
		if got := pollInterval(tc.flag, tc.cluster); got != tc.want {
			t.Errorf("pollInterval(%s, %v) = %s, want %s", tc.flag, tc.cluster, got, tc.want)
		}
	}
	// The flag parses; a bad value is refused before anything starts.
	err := run(context.Background(), []string{"--poll", "soon", "--data-dir", filepath.Join(t.TempDir(), "d")}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "poll") {
		t.Fatalf("--poll soon: %v", err)
	}
}
