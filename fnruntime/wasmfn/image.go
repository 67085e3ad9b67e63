package wasmfn

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/configasdata/cad/revision"
)

// The image formats of wasm functions. kpt alpha wasm push writes an
// index (a Docker manifest list) with one manifest for the platform
// js/wasm, whose single layer is a gzipped tar holding the module as its
// one file; kpt picks that platform when it runs an image with
// --allow-alpha-wasm. WASI modules are published the same way with the
// platform wasip1/wasm, and OCI artifacts carry the module itself as a
// layer of a wasm media type. All three are read.
var (
	// wasmOSes are the operating systems of a wasm platform, in order of
	// preference: WASI first (what this runtime runs), then kpt's js.
	wasmOSes = []string{"wasip1", "wasi", "js"}
	// wasmLayerTypes are layer media types that are the module itself.
	wasmLayerTypes = map[types.MediaType]bool{
		"application/wasm":                                  true,
		"application/vnd.wasm.content.layer.v1+wasm":        true,
		"application/vnd.module.wasm.content.layer.v1+wasm": true,
	}
)

// parseReference parses an image reference with the Runtime's options.
func (r *Runtime) parseReference(image string) (name.Reference, error) {
	var opts []name.Option
	if r.opts.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(image, opts...)
	if err != nil {
		return nil, fmt.Errorf("wasmfn: %w: image %q: %w", revision.ErrInvalid, image, err)
	}
	return ref, nil
}

func (r *Runtime) remoteOptions(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx)}
	switch {
	case r.opts.Auth != nil:
		opts = append(opts, remote.WithAuth(r.opts.Auth))
	case r.opts.Keychain != nil:
		opts = append(opts, remote.WithAuthFromKeychain(r.opts.Keychain))
	default:
		opts = append(opts, remote.WithAuth(authn.Anonymous))
	}
	return append(opts, r.opts.RemoteOptions...)
}

// pull resolves image in its registry and returns its compiled module and
// the digest of the layer that holds it; a layer compiled before is not
// downloaded again.
func (r *Runtime) pull(ctx context.Context, image string) (*module, string, error) {
	ref, err := r.parseReference(image)
	if err != nil {
		return nil, "", err
	}
	opts := r.remoteOptions(ctx)
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("pulling %s: %w", image, err)
	}
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, "", fmt.Errorf("pulling %s: %w", image, err)
		}
		manifest, err := idx.IndexManifest()
		if err != nil {
			return nil, "", fmt.Errorf("pulling %s: %w", image, err)
		}
		d, err := wasmManifest(manifest)
		if err != nil {
			return nil, "", err
		}
		if img, err = idx.Image(d.Digest); err != nil {
			return nil, "", fmt.Errorf("pulling %s: %w", image, err)
		}
	} else if img, err = desc.Image(); err != nil {
		return nil, "", fmt.Errorf("pulling %s: %w", image, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, "", fmt.Errorf("pulling %s: %w", image, err)
	}
	if len(layers) != 1 {
		return nil, "", fmt.Errorf("%w: the image has %d layers; a wasm function image has one, holding the module", ErrNotWasm, len(layers))
	}
	layer := layers[0]
	digest, err := layer.Digest()
	if err != nil {
		return nil, "", err
	}
	if m, ok := r.cachedLayer(digest.String()); ok {
		return m, digest.String(), nil
	}
	data, err := r.readLayer(layer)
	if err != nil {
		return nil, "", fmt.Errorf("layer %s: %w", digest, err)
	}
	m, err := r.compile(ctx, data)
	if err != nil {
		return nil, "", err
	}
	r.rememberLayer(digest.String(), m.key)
	return m, digest.String(), nil
}

// wasmManifest picks the manifest of a wasm platform from an index.
func wasmManifest(m *v1.IndexManifest) (v1.Descriptor, error) {
	var platforms []string
	for _, os := range wasmOSes {
		for _, d := range m.Manifests {
			if d.Platform != nil && d.Platform.Architecture == "wasm" && d.Platform.OS == os {
				return d, nil
			}
		}
	}
	for _, d := range m.Manifests {
		if d.Platform != nil {
			platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		}
	}
	return v1.Descriptor{}, fmt.Errorf("%w: the image index has no wasm platform (js/wasm, as kpt alpha wasm push writes, or wasip1/wasm), only [%s]", ErrNotWasm, strings.Join(platforms, ", "))
}

// readLayer returns the module a layer holds: the layer itself for a wasm
// media type, else the one regular file of its tar.
func (r *Runtime) readLayer(layer v1.Layer) ([]byte, error) {
	max := r.opts.MaxModuleBytes
	size, err := layer.Size()
	if err != nil {
		return nil, err
	}
	if size > max {
		return nil, moduleTooLarge("wasm image layer", max)
	}
	mt, err := layer.MediaType()
	if err != nil {
		return nil, err
	}
	if wasmLayerTypes[mt] {
		rc, err := layer.Compressed()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return readBounded(rc, max, "wasm image layer")
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// The uncompressed stream is bounded too: a small gzip can expand far.
	tr := tar.NewReader(io.LimitReader(rc, 2*max+64<<10))
	var data []byte
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: the layer is not a tar of the module: %w", ErrNotWasm, err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("%w: the layer holds %q, which is not a regular file", ErrNotWasm, hdr.Name)
		}
		if data != nil {
			return nil, fmt.Errorf("%w: the layer holds more than one file (%q too); a wasm function image holds only the module", ErrNotWasm, hdr.Name)
		}
		if hdr.Size > max {
			return nil, moduleTooLarge("wasm module "+hdr.Name, max)
		}
		if data, err = readBounded(tr, max, "wasm module "+hdr.Name); err != nil {
			return nil, err
		}
	}
	if data == nil {
		return nil, fmt.Errorf("%w: the layer holds no file", ErrNotWasm)
	}
	return data, nil
}
