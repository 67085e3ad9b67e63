package fnrunner_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnrunner"
	"github.com/configasdata/cad/fnrunner/internal/evaluatorpb"
	"github.com/configasdata/cad/fnrunner/internal/testrunner"
	"github.com/configasdata/cad/internal/peakmem"
	"github.com/configasdata/cad/revision"
)

const hugeAddrEnv = "FNRUNNER_TEST_HUGE_URL"

// A runner that answers with 64 MiB is refused by a 1 MiB bound with an
// error matching revision.ErrLimit, and the client does not hold memory
// in proportion: gRPC refuses the message from its length prefix. The
// runner runs in the parent test process, the client in a child whose
// peak memory is measured.
func TestHugeOutputRefused(t *testing.T) {
	const huge = 64 << 20
	if !peakmem.InChild() {
		srv := testrunner.Start(t, testrunner.Options{Handlers: map[string]testrunner.Handler{
			"huge": func(context.Context, *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
				return &evaluatorpb.EvaluateFunctionResponse{ResourceList: bytes.Repeat([]byte("x"), huge)}, nil
			},
		}})
		t.Setenv(hugeAddrEnv, srv.URL)
	}
	r := peakmem.Measure(t, 512<<20, func(t *testing.T) {
		c := newClient(t, os.Getenv(hugeAddrEnv), &fnrunner.Options{MaxOutput: 1 << 20})
		var out bytes.Buffer
		_, err := c.Function("huge", "").RunStream(context.Background(), strings.NewReader(resourceList), &out)
		var le *revision.LimitError
		if !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Limit != "fnrunner.Options.MaxOutput" || out.Len() != 0 {
			t.Fatalf("huge output: %v, %d bytes written; want an error matching revision.ErrLimit", err, out.Len())
		}
		if !strings.Contains(err.Error(), `"huge"`) || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("error %q does not name the image and the runner", err)
		}
		t.Log(err)
	})
	t.Logf("client grew by %d KiB (start %d KiB, peak %d KiB) refusing a %d MiB response", r.Growth()>>10, r.StartRSS>>10, r.PeakRSS>>10, huge>>20)
	if r.Killed || r.Growth() > 24<<20 {
		t.Errorf("the client grew by %d bytes refusing %d: memory in proportion to the response", r.Growth(), huge)
	}
}

// An input over the runner's own bound (Porch's --max-request-body-size)
// is the runner's refusal, said as such, not cad's bound.
func TestInputRefusedByRunner(t *testing.T) {
	srv := testrunner.Start(t, testrunner.Options{MaxRecvMsgSize: 1000, Handlers: map[string]testrunner.Handler{"fn": testrunner.Echo("")}})
	c := newClient(t, srv.URL, nil)
	big := resourceList + "  data:\n    k: " + strings.Repeat("v", 2000) + "\n"
	_, err := c.Function("fn", "").RunStream(context.Background(), strings.NewReader(big), &bytes.Buffer{})
	if err == nil || errors.Is(err, revision.ErrLimit) || !strings.Contains(err.Error(), "the runner refused the input") {
		t.Errorf("err = %v, want the runner's refusal of the input", err)
	}
	if srv.Calls() != 0 {
		t.Errorf("calls = %d", srv.Calls())
	}
}
