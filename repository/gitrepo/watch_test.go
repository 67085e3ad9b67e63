package gitrepo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// A watch sees the writes of its own Repository at once, long before the
// next poll.
func TestWatchSeesOwnWritesAtOnce(t *testing.T) {
	dir := newBare(t)
	r := mustOpen(t, gitSpec(dir), &gitrepo.Options{PollInterval: time.Hour})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events := make(chan repository.Event, 16)
	started := make(chan struct{})
	go func() {
		close(started)
		_ = r.Watch(ctx, repository.ListOptions{}, func(ev repository.Event) error {
			events <- ev
			return nil
		})
	}()
	<-started
	// The watch reports changes after its first snapshot, whose moment is
	// unknown here: write until it reports, each write waking it. With an
	// hour between polls, only the wake-up can deliver an event.
	key := revision.Key{Package: "app", Workspace: "ws"}
	d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kptPkg("app", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		md := revision.Metadata{Labels: map[string]string{"n": strconv.Itoa(i)}}
		if _, err := r.SetMetadata(ctx, key, md, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-events:
			if ev.Revision.Meta().Key.Package != "app" || (ev.Type != repository.Added && ev.Type != repository.Modified) {
				t.Fatalf("event %s %s", ev.Type, ev.Revision.Meta().Key)
			}
			return
		case <-time.After(2 * time.Second):
			if i == 10 {
				t.Fatal("no event for 11 own writes, with an hour between polls")
			}
		}
	}
}

// Changed (a push webhook) makes a watch read the writes of another
// Repository at once, long before the next poll.
func TestWatchChangedReadsAtOnce(t *testing.T) {
	dir := newBare(t)
	r := mustOpen(t, gitSpec(dir), &gitrepo.Options{PollInterval: time.Hour})
	defer r.Close()
	other := mustOpen(t, gitSpec(dir), nil)
	defer other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events := make(chan repository.Event, 16)
	go func() {
		_ = r.Watch(ctx, repository.ListOptions{}, func(ev repository.Event) error {
			events <- ev
			return nil
		})
	}()
	// The other handle writes until the watch reports, each write
	// announced with Changed; with an hour between polls only Changed can
	// deliver an event.
	key := revision.Key{Package: "app", Workspace: "ws"}
	d, err := other.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kptPkg("app", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := other.SetMetadata(ctx, key, revision.Metadata{Labels: map[string]string{"n": strconv.Itoa(i)}}, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var n repository.Notifiable = r
		n.Changed()
		select {
		case ev := <-events:
			if ev.Revision.Meta().Key.Package != "app" {
				t.Fatalf("event %s %s", ev.Type, ev.Revision.Meta().Key)
			}
			return
		case <-time.After(2 * time.Second):
			if i == 10 {
				t.Fatal("no event for 11 announced writes of another handle, with an hour between polls")
			}
		}
	}
}
