package store

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type subscriber struct {
	resource string
	ch       chan Event
}

// subscriberBuffer is the number of events a slow watcher may fall behind
// before its watch is ended.
const subscriberBuffer = 256

// Watch returns the changes of objects of resource after resourceVersion
// rv (empty or "0": from now on), until ctx is done: first the logged
// changes after rv, then new ones as they happen. The channel is closed when
// ctx is done or the watcher falls too far behind. It returns an error
// matching ErrGone when rv is older than the log, and ErrInvalid for an rv
// that is not a number.
func (s *Store) Watch(ctx context.Context, resource, rv string) (<-chan Event, error) {
	var from uint64
	if rv != "" && rv != "0" {
		n, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: resourceVersion %q", ErrInvalid, rv)
		}
		from = n
	}
	s.mu.Lock()
	var backlog []Event
	if from > 0 && from < s.rv {
		if len(s.log) == 0 || s.log[0].rv > from+1 {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: %s", ErrGone, rv)
		}
		for _, e := range s.log {
			if e.rv > from && e.Resource == resource {
				backlog = append(backlog, Event{Type: e.Type, Resource: e.Resource, Object: e.Object.DeepCopy(), rv: e.rv})
			}
		}
	}
	sub := &subscriber{resource: resource, ch: make(chan Event, subscriberBuffer+len(backlog))}
	for _, e := range backlog {
		sub.ch <- e
	}
	s.subs[sub] = struct{}{}
	s.mu.Unlock()

	go func() {
		<-ctx.Done()
		s.mu.Lock()
		if _, ok := s.subs[sub]; ok {
			delete(s.subs, sub)
			close(sub.ch)
		}
		s.mu.Unlock()
	}()
	return sub.ch, nil
}

// emitLocked logs the event and sends it to the subscribers of its resource.
// A subscriber whose buffer is full is dropped: its channel is closed.
func (s *Store) emitLocked(t EventType, resource string, u *unstructured.Unstructured) {
	rv, _ := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
	s.log = append(s.log, Event{Type: t, Resource: resource, Object: u.DeepCopy(), rv: rv})
	if len(s.log) > s.logSize {
		s.log = s.log[len(s.log)-s.logSize:]
	}
	for sub := range s.subs {
		if sub.resource != resource {
			continue
		}
		select {
		case sub.ch <- Event{Type: t, Resource: resource, Object: u.DeepCopy(), rv: rv}:
		default:
			delete(s.subs, sub)
			close(sub.ch)
		}
	}
}
