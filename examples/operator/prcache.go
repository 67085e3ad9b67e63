package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// How sharded replicas cache PackageRevisions. Without sharding the
// manager's cache holds every PackageRevision. With it, each replica
// would hold every shard's objects while reconciling only its own (at
// 1,000 repositories three replicas held 3.5 times one replica's heap),
// so a PackageRevision carries the label shardLabel(n) (n the shard
// count) whose value is the shard of its repository, and:
//
//   - the manager's cache holds only the PackageRevisions without a valid
//     shard label (made by users, or by an operator from before the
//     label): every replica sees them, and the replica holding the shard
//     of the object's repository labels it (the PackageRevision
//     reconciler), after which it leaves that cache;
//   - a replica that acquires a shard starts a cache of that shard's
//     labelled PackageRevisions (prCaches.start), reconciles nothing of
//     the shard until the cache has synced, and stops the cache when its
//     tenure ends. The new cache lists from the API server, so it holds
//     every write of the shard's last holder, which released the shard
//     only after its reconciles ended;
//   - the reconcilers read PackageRevisions through shardedClient, which
//     merges the manager's cache with the running shard caches;
//   - a label naming the wrong shard (a changed --shards is a different
//     label key, so only a hand-edited one) is corrected by the replica
//     that sees it (prKey), and a value that is no shard number leaves
//     the object in the manager's cache.
//
// Discovery writes the label on the objects it creates. The variant
// reconcilers, which resync on an upstream's new latest revision in any
// shard, watch the metadata of the PackageRevisions labelled latest
// instead (a small cache of every shard: latestCache).

// shardLabel is the label key of the shard of a PackageRevision's
// repository among n shards. The count is part of the key, so that
// replicas restarted with another --shards relabel every object instead
// of trusting labels of the old count.
func shardLabel(n int) string { return "cad.configasdata.dev/shard-of-" + strconv.Itoa(n) }

// unshardedSelector selects the objects whose shardLabel(n) is missing or
// names no shard in [0, n).
func unshardedSelector(n int) (labels.Selector, error) {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = strconv.Itoa(i)
	}
	req, err := labels.NewRequirement(shardLabel(n), selection.NotIn, vals)
	if err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	return labels.NewSelector().Add(*req), nil
}

// prCaches runs one cache of labelled PackageRevisions per shard held.
// Its methods are safe for concurrent use.
type prCaches struct {
	// newCache returns the (unstarted) cache of shard i's objects.
	newCache func(i int) (cache.Cache, error)

	mu       sync.Mutex
	running  map[int]cache.Cache // synced
	handlers []func(client.Object)
}

// start starts the cache of shard i under ctx (it stops when ctx ends),
// waits until it synced, adds the event handlers to it and returns. It
// returns ctx's error when ctx ended first, and the error of making the
// cache otherwise.
func (p *prCaches) start(ctx context.Context, i int) error {
	c, err := p.newCache(i)
	if err != nil {
		return fmt.Errorf("sharding: cache of shard %d: %w", i, err)
	}
	if err := c.IndexField(ctx, &porchv1alpha2.PackageRevision{}, prRepositoryIndex, prRepositoryOf); err != nil {
		return fmt.Errorf("sharding: cache of shard %d: %w", i, err)
	}
	inf, err := c.GetInformer(ctx, &porchv1alpha2.PackageRevision{})
	if err != nil {
		return fmt.Errorf("sharding: cache of shard %d: %w", i, err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("sharding: cache of shard %d did not sync", i)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, h := range p.handlers {
		if err := addHandler(inf, h); err != nil {
			return fmt.Errorf("sharding: cache of shard %d: %w", i, err)
		}
	}
	if p.running == nil {
		p.running = map[int]cache.Cache{}
	}
	p.running[i] = c
	context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.running[i] == c {
			delete(p.running, i)
		}
	})
	return nil
}

// onEvent calls h with each object of every shard cache, running and
// started later, that is added, updated or deleted.
func (p *prCaches) onEvent(ctx context.Context, h func(client.Object)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handlers = append(p.handlers, h)
	for _, c := range p.running {
		inf, err := c.GetInformer(ctx, &porchv1alpha2.PackageRevision{})
		if err != nil {
			return err
		}
		if err := addHandler(inf, h); err != nil {
			return err
		}
	}
	return nil
}

func addHandler(inf cache.Informer, h func(client.Object)) error {
	obj := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if co, ok := o.(client.Object); ok {
			h(co)
		}
	}
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    obj,
		UpdateFunc: func(_, o any) { obj(o) },
		DeleteFunc: obj,
	})
	return err
}

// caches returns the running shard caches, by shard.
func (p *prCaches) caches() []cache.Cache {
	p.mu.Lock()
	defer p.mu.Unlock()
	shards := make([]int, 0, len(p.running))
	for i := range p.running {
		shards = append(shards, i)
	}
	slices.Sort(shards)
	out := make([]cache.Cache, 0, len(shards))
	for _, i := range shards {
		out = append(out, p.running[i])
	}
	return out
}

// shardedClient is the manager's client whose PackageRevision reads also
// see the shard caches (see the comment at the top of this file); the
// other kinds and every write are the manager client's. It is safe for
// concurrent use.
type shardedClient struct {
	client.Client
	prs *prCaches
}

// Get reads a PackageRevision from the shard caches, then the manager's
// cache; it returns a NotFound error when none has it.
func (c *shardedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*porchv1alpha2.PackageRevision); !ok {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	for _, sc := range c.prs.caches() {
		err := sc.Get(ctx, key, obj, opts...)
		if err == nil || !apierrors.IsNotFound(err) {
			return err
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// List lists PackageRevisions from the shard caches and the manager's
// cache, each object once (an object just labelled may be in two for a
// moment: the shard cache's copy, the newer, is kept).
func (c *shardedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l, ok := list.(*porchv1alpha2.PackageRevisionList)
	if !ok {
		return c.Client.List(ctx, list, opts...)
	}
	var out []porchv1alpha2.PackageRevision
	seen := map[client.ObjectKey]bool{}
	add := func(items []porchv1alpha2.PackageRevision) {
		for i := range items {
			k := client.ObjectKeyFromObject(&items[i])
			if !seen[k] {
				seen[k] = true
				out = append(out, items[i])
			}
		}
	}
	for _, sc := range c.prs.caches() {
		var part porchv1alpha2.PackageRevisionList
		if err := sc.List(ctx, &part, opts...); err != nil {
			return err
		}
		add(part.Items)
	}
	var part porchv1alpha2.PackageRevisionList
	if err := c.Client.List(ctx, &part, opts...); err != nil {
		return err
	}
	add(part.Items)
	part.Items = out
	*l = part
	return nil
}
