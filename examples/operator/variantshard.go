package main

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
)

// How a PackageVariantSet is shared by sharded replicas. A set's
// downstreams lie in many repositories, each owned by one replica; as
// Porch's set controller makes a PackageVariant per downstream, each
// reconciled where its downstream is, every replica here syncs the set
// over the downstream repositories it owns (variant.Options.Downstreams)
// and writes nothing else. The set's own replica (the one holding the
// shard of the set's namespace/name) also adds and removes its finalizer,
// records its status (validation, and the sync of its own downstreams),
// and removes its downstreams everywhere when it is deleted.

// enterHeld starts a reconcile that writes into the repositories of keys
// (namespace/name) that this replica holds: it enters each of their shards
// (see enter), so that none is released while the reconcile runs. It
// returns a context that ends when ctx does, when the tenure of any
// entered shard ends or when one of them is to be handed over; owned,
// which reports whether a repository name of namespace ns is in an
// entered shard; and done, which the reconcile must call when it ends. With a nil s (no sharding) everything is owned.
func (s *sharder) enterHeld(ctx context.Context, ns string, keys []string) (context.Context, func(repo string) bool, func()) {
	if s == nil {
		return ctx, func(string) bool { return true }, func() {}
	}
	rctx, cancel := context.WithCancel(ctx)
	entered := map[int]bool{}
	var dones []func()
	var held []string // a key of each entered shard
	for _, k := range keys {
		sh := shardOf(k, s.shards)
		if _, seen := entered[sh]; seen {
			continue
		}
		tctx, done, ok := s.enter(ctx, k)
		entered[sh] = ok
		if !ok {
			continue
		}
		held = append(held, k)
		stop := context.AfterFunc(tctx, cancel)
		dones = append(dones, func() { stop(); done() })
	}
	// A shard to be handed over waits for its reconciles to end: a long
	// sync over many shards is cut short instead (and retried over the
	// shards still held), so that a joining replica gets its share
	// within a retry period or two.
	go func() {
		t := time.NewTicker(s.retryPeriod)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				for _, k := range held {
					if !s.owns(k) {
						cancel()
						return
					}
				}
			}
		}
	}()
	owned := func(repo string) bool { return entered[shardOf(repoKey(ns, repo), s.shards)] }
	return rctx, owned, func() {
		cancel()
		for _, d := range dones {
			d()
		}
	}
}

// setShardItems lists every PackageVariantSet once for its own shard key
// and once for each Repository of its namespace, so that a replica that
// acquires a shard syncs the sets whose downstreams may lie there.
func setShardItems(ctx context.Context, c client.Reader) ([]shardItem, error) {
	var sets configv1alpha2.PackageVariantSetList
	if err := c.List(ctx, &sets); err != nil {
		return nil, err
	}
	var repos configv1alpha1.RepositoryList
	if len(sets.Items) > 0 {
		if err := c.List(ctx, &repos); err != nil {
			return nil, err
		}
	}
	byNS := map[string][]string{}
	for _, r := range repos.Items {
		byNS[r.Namespace] = append(byNS[r.Namespace], r.Name)
	}
	var out []shardItem
	for _, it := range sets.Items {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&it)}
		out = append(out, shardItem{req: req, key: repoKey(it.Namespace, it.Name)})
		for _, name := range byNS[it.Namespace] {
			out = append(out, shardItem{req: req, key: repoKey(it.Namespace, name)})
		}
	}
	return out, nil
}
