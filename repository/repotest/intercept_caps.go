package repotest

// The optional interfaces an intercepted repository implements, one type
// per combination, so that it implements exactly those of the repository
// it wraps (see Intercept). Each part holds the interceptor and adds one
// interface's method.

import (
	"context"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

type watcherPart struct{ i *intercepted }

func (p watcherPart) Watch(ctx context.Context, opts repository.ListOptions, handle func(repository.Event) error) error {
	return p.i.watch(ctx, opts, handle)
}

type versionerPart struct{ i *intercepted }

func (p versionerPart) Version(ctx context.Context) (string, error) {
	return p.i.version(ctx)
}

type metadataWriterPart struct{ i *intercepted }

func (p metadataWriterPart) SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	return p.i.setMetadata(ctx, key, md, opts)
}

type adopterPart struct{ i *intercepted }

func (p adopterPart) Adopt(ctx context.Context, key revision.Key, opts repository.AdoptOptions) (revision.PackageRevision, error) {
	return p.i.adopt(ctx, key, opts)
}

type locatorPart struct{ i *intercepted }

func (p locatorPart) Location() (repository.Type, string) {
	return p.i.location()
}

var (
	_ repository.Watcher        = watcherPart{}
	_ repository.Versioner      = versionerPart{}
	_ repository.MetadataWriter = metadataWriterPart{}
	_ repository.Adopter        = adopterPart{}
	_ repository.Locator        = locatorPart{}
)

// withCapabilities returns i with the optional interfaces its repository
// has (MetadataWriter and Adopter also when i has their hook).
func withCapabilities(i *intercepted) repository.Repository {
	has := func(ok bool, bit int) int {
		if ok {
			return bit
		}
		return 0
	}
	_, w := i.next.(repository.Watcher)
	_, v := i.next.(repository.Versioner)
	_, m := i.next.(repository.MetadataWriter)
	_, a := i.next.(repository.Adopter)
	_, l := i.next.(repository.Locator)
	mask := has(w, 1) | has(v, 2) | has(m || i.f.SetMetadata != nil, 4) | has(a || i.f.Adopt != nil, 8) | has(l, 16)
	var (
		wp = watcherPart{i}
		vp = versionerPart{i}
		mp = metadataWriterPart{i}
		ap = adopterPart{i}
		lp = locatorPart{i}
	)
	switch mask {
	case 0:
		return i
	case 1:
		return struct {
			*intercepted
			watcherPart
		}{i, wp}
	case 2:
		return struct {
			*intercepted
			versionerPart
		}{i, vp}
	case 3:
		return struct {
			*intercepted
			watcherPart
			versionerPart
		}{i, wp, vp}
	case 4:
		return struct {
			*intercepted
			metadataWriterPart
		}{i, mp}
	case 5:
		return struct {
			*intercepted
			watcherPart
			metadataWriterPart
		}{i, wp, mp}
	case 6:
		return struct {
			*intercepted
			versionerPart
			metadataWriterPart
		}{i, vp, mp}
	case 7:
		return struct {
			*intercepted
			watcherPart
			versionerPart
			metadataWriterPart
		}{i, wp, vp, mp}
	case 8:
		return struct {
			*intercepted
			adopterPart
		}{i, ap}
	case 9:
		return struct {
			*intercepted
			watcherPart
			adopterPart
		}{i, wp, ap}
	case 10:
		return struct {
			*intercepted
			versionerPart
			adopterPart
		}{i, vp, ap}
	case 11:
		return struct {
			*intercepted
			watcherPart
			versionerPart
			adopterPart
		}{i, wp, vp, ap}
	case 12:
		return struct {
			*intercepted
			metadataWriterPart
			adopterPart
		}{i, mp, ap}
	case 13:
		return struct {
			*intercepted
			watcherPart
			metadataWriterPart
			adopterPart
		}{i, wp, mp, ap}
	case 14:
		return struct {
			*intercepted
			versionerPart
			metadataWriterPart
			adopterPart
		}{i, vp, mp, ap}
	case 15:
		return struct {
			*intercepted
			watcherPart
			versionerPart
			metadataWriterPart
			adopterPart
		}{i, wp, vp, mp, ap}
	case 16:
		return struct {
			*intercepted
			locatorPart
		}{i, lp}
	case 17:
		return struct {
			*intercepted
			watcherPart
			locatorPart
		}{i, wp, lp}
	case 18:
		return struct {
			*intercepted
			versionerPart
			locatorPart
		}{i, vp, lp}
	case 19:
		return struct {
			*intercepted
			watcherPart
			versionerPart
			locatorPart
		}{i, wp, vp, lp}
	case 20:
		return struct {
			*intercepted
			metadataWriterPart
			locatorPart
		}{i, mp, lp}
	case 21:
		return struct {
			*intercepted
			watcherPart
			metadataWriterPart
			locatorPart
		}{i, wp, mp, lp}
	case 22:
		return struct {
			*intercepted
			versionerPart
			metadataWriterPart
			locatorPart
		}{i, vp, mp, lp}
	case 23:
		return struct {
			*intercepted
			watcherPart
			versionerPart
			metadataWriterPart
			locatorPart
		}{i, wp, vp, mp, lp}
	case 24:
		return struct {
			*intercepted
			adopterPart
			locatorPart
		}{i, ap, lp}
	case 25:
		return struct {
			*intercepted
			watcherPart
			adopterPart
			locatorPart
		}{i, wp, ap, lp}
	case 26:
		return struct {
			*intercepted
			versionerPart
			adopterPart
			locatorPart
		}{i, vp, ap, lp}
	case 27:
		return struct {
			*intercepted
			watcherPart
			versionerPart
			adopterPart
			locatorPart
		}{i, wp, vp, ap, lp}
	case 28:
		return struct {
			*intercepted
			metadataWriterPart
			adopterPart
			locatorPart
		}{i, mp, ap, lp}
	case 29:
		return struct {
			*intercepted
			watcherPart
			metadataWriterPart
			adopterPart
			locatorPart
		}{i, wp, mp, ap, lp}
	case 30:
		return struct {
			*intercepted
			versionerPart
			metadataWriterPart
			adopterPart
			locatorPart
		}{i, vp, mp, ap, lp}
	case 31:
		return struct {
			*intercepted
			watcherPart
			versionerPart
			metadataWriterPart
			adopterPart
			locatorPart
		}{i, wp, vp, mp, ap, lp}
	}
	panic("unreachable")
}
