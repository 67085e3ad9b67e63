package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// An external checker records its verdict on a proposal as a condition:
// revision data, so the proposal's files stay as proposed. Approval waits
// for it, and the check and the publish are one compare-and-swap.
func ExampleEngine_UpdateReadiness() {
	ctx := context.Background()
	repo := memrepo.New("deploy", nil)
	defer repo.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"deploy": repo}})
	if err != nil {
		log.Fatal(err)
	}
	key := revision.Key{Package: "app", Workspace: "v1"}
	if _, err := e.Init(ctx, "deploy", key, engine.InitOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, err := e.SetReadinessGates(ctx, "deploy", key, []revision.ReadinessGate{{ConditionType: "example.com/scanned"}}); err != nil {
		log.Fatal(err)
	}
	proposed, err := e.Propose(ctx, "deploy", key)
	if err != nil {
		log.Fatal(err)
	}
	_, err = e.Approve(ctx, "deploy", key)
	fmt.Println("before the check:", errors.Is(err, engine.ErrNotReady))

	// The checker scans the proposal it read and records the result
	// against that version.
	checked, err := e.UpdateReadiness(ctx, "deploy", key, engine.ReadinessOptions{
		Conditions: []revision.Condition{{Type: "example.com/scanned", Status: revision.ConditionTrue, Reason: "NoFindings"}},
		Version:    proposed.Meta().Version,
	})
	if err != nil {
		log.Fatal(err)
	}
	before, _ := proposed.Files(ctx)
	after, _ := checked.Files(ctx)
	fmt.Println("files unchanged:", before.Equal(after))

	pub, err := e.Approve(ctx, "deploy", key)
	if err != nil {
		log.Fatal(err)
	}
	ready, _ := engine.Readiness(ctx, pub)
	fmt.Println(pub.Meta().Key, ready.Conditions[0].Type, ready.Conditions[0].Status)
	// Output:
	// before the check: true
	// files unchanged: true
	// deploy:app@v1/v1 example.com/scanned True
}
