package ocirepo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/configasdata/cad/revision"
)

// LayerError reports a package layer read from the registry that cad
// refuses: an unsafe or unsupported tar entry, a blob that is not what
// its descriptor declares, or an archive larger than the configured
// caps. It matches repository.ErrInvalidInput (and revision.ErrInvalid)
// with errors.Is, and, when Limit is set, revision.ErrLimit too.
type LayerError struct {
	Digest string // the layer's digest
	Entry  string // the offending entry name, "" for the whole layer
	Reason string
	// Limit names the bound the layer exceeds, such as
	// "ocirepo.Options.MaxFileBytes"; "" when it is refused for another
	// reason.
	Limit string
}

// Error describes the refused layer and entry.
func (e *LayerError) Error() string {
	if e.Entry != "" {
		return fmt.Sprintf("package layer %s: entry %q: %s", e.Digest, e.Entry, e.Reason)
	}
	return fmt.Sprintf("package layer %s: %s", e.Digest, e.Reason)
}

// Is reports whether target is revision.ErrInvalid, which is
// repository.ErrInvalidInput, or, for a layer over a bound,
// revision.ErrLimit.
func (e *LayerError) Is(target error) bool {
	return target == revision.ErrInvalid || (e.Limit != "" && target == revision.ErrLimit)
}

// encodedLayer is a package's files as a gzip tar, with its config.
type encodedLayer struct {
	layer, config         []byte
	layerDesc, configDesc v1.Descriptor
}

// encodeLayer writes files as a deterministic gzip tar (sorted, fixed
// times and modes), so equal content gives an equal digest and the blob
// is shared between the revisions of a package.
func encodeLayer(files revision.Files) (*encodedLayer, error) {
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, p := range files.Paths() {
		data, _ := files.Get(p)
		hdr := &tar.Header{Name: p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	diffID := sha256.Sum256(tarBuf.Bytes())
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if _, err := zw.Write(tarBuf.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	cfg := v1.ConfigFile{
		RootFS: v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{{Algorithm: "sha256", Hex: hex.EncodeToString(diffID[:])}}},
	}
	cfgBytes, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	e := &encodedLayer{layer: gz.Bytes(), config: cfgBytes}
	e.layerDesc = descriptor(e.layer, types.OCILayer)
	e.configDesc = descriptor(e.config, types.OCIConfigJSON)
	return e, nil
}

func descriptor(b []byte, mt types.MediaType) v1.Descriptor {
	sum := sha256.Sum256(b)
	return v1.Descriptor{MediaType: mt, Size: int64(len(b)), Digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}}
}

// limits bound what decodeLayer accepts.
type limits struct {
	maxExpanded int64
	maxFile     int64
	maxFiles    int
}

// decodeLayer reads the untrusted gzip tar r of layer digest into Files.
// It accepts only regular files (and directory entries, which it skips)
// whose names pass revision.ValidatePath, and refuses absolute names, ..,
// symbolic and hard links, devices, FIFOs, duplicate names, and more than
// lim.maxExpanded bytes, a file over lim.maxFile or more than lim.maxFiles
// entries, with a *LayerError; the sizes are checked from the tar
// headers, before the entries are read.
func decodeLayer(r io.Reader, digest string, lim limits) (revision.Files, error) {
	bad := func(entry, format string, args ...any) error {
		return &LayerError{Digest: digest, Entry: entry, Reason: fmt.Sprintf(format, args...)}
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return revision.Files{}, bad("", "not gzip: %v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	var total int64
	entries := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return revision.Files{}, bad("", "not a tar archive: %v", err)
		}
		entries++
		if entries > lim.maxFiles {
			err := bad("", "more than %d entries", lim.maxFiles)
			err.(*LayerError).Limit = "ocirepo.Options.MaxFiles"
			return revision.Files{}, err
		}
		nm := hdr.Name
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := revision.ValidatePath(strings.TrimSuffix(nm, "/")); err != nil {
				return revision.Files{}, bad(nm, "%v", err)
			}
			continue
		case tar.TypeReg, tar.TypeRegA:
		case tar.TypeSymlink:
			return revision.Files{}, bad(nm, "symbolic links are not allowed")
		case tar.TypeLink:
			return revision.Files{}, bad(nm, "hard links are not allowed")
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			return revision.Files{}, bad(nm, "device files and FIFOs are not allowed")
		default:
			return revision.Files{}, bad(nm, "unsupported entry type %q", string(rune(hdr.Typeflag)))
		}
		if err := revision.ValidatePath(nm); err != nil {
			return revision.Files{}, bad(nm, "%v", err)
		}
		if _, dup := files[nm]; dup {
			return revision.Files{}, bad(nm, "duplicate entry")
		}
		if hdr.Size < 0 {
			return revision.Files{}, bad(nm, "negative size %d", hdr.Size)
		}
		if hdr.Size > lim.maxFile {
			err := bad(nm, "%d bytes, over the cap of %d bytes per file", hdr.Size, lim.maxFile)
			err.(*LayerError).Limit = "ocirepo.Options.MaxFileBytes"
			return revision.Files{}, err
		}
		if total+hdr.Size > lim.maxExpanded {
			err := bad(nm, "the package expands past the cap of %d bytes", lim.maxExpanded)
			err.(*LayerError).Limit = "ocirepo.Options.MaxExpandedSize"
			return revision.Files{}, err
		}
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size+1))
		if err != nil {
			return revision.Files{}, bad(nm, "read: %v", err)
		}
		if int64(len(data)) != hdr.Size {
			return revision.Files{}, bad(nm, "size %d does not match the header's %d", len(data), hdr.Size)
		}
		total += hdr.Size
		files[nm] = data
	}
	f, err := revision.NewFiles(files)
	if err != nil {
		return revision.Files{}, bad("", "%v", err)
	}
	return f, nil
}
