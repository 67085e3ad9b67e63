package helmfn

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/configasdata/cad/internal/lru"
)

// DefaultArchiveCacheBytes is the default bound of the chart archives a
// Function (and a Charts) keeps in memory between renders.
const DefaultArchiveCacheBytes = 32 << 20

// archiveCache keeps chart archives from HTTP chart repositories by the
// SHA-256 digest their index.yaml entry gives (and the credentials they
// were read with, so that an archive read with credentials is never
// handed to a caller without them), and only archives whose content has
// that digest, so a hit is the very archive the index names
// now: a repository's index is read on every render (a version may be
// added or republished), but an archive already downloaded is not fetched
// again. It holds at most max bytes, dropping the least recently used.
type archiveCache struct {
	lru *lru.Cache[string, []byte]
}

func newArchiveCache(max int64) *archiveCache {
	return &archiveCache{lru: lru.New[string, []byte](max, max/4)}
}

// normDigest returns the hex SHA-256 of an index.yaml digest ("sha256:..."
// or bare hex), or "" when it is not one.
func normDigest(d string) string {
	d = strings.ToLower(strings.TrimPrefix(d, "sha256:"))
	if len(d) != sha256.Size*2 {
		return ""
	}
	if _, err := hex.DecodeString(d); err != nil {
		return ""
	}
	return d
}

// cacheKey is the key of the archive with digest d read with creds; ""
// when d is not a SHA-256 digest.
func cacheKey(d string, creds *credentials) string {
	d = normDigest(d)
	if d == "" || creds == nil {
		return d
	}
	who := sha256.Sum256([]byte(creds.host + "\x00" + creds.username + "\x00" + creds.password))
	return d + "/" + hex.EncodeToString(who[:])
}

// get returns the archive with digest d read with creds, if kept.
func (c *archiveCache) get(d string, creds *credentials) ([]byte, bool) {
	key := cacheKey(d, creds)
	if c == nil || key == "" {
		return nil, false
	}
	return c.lru.Get(key)
}

// put keeps data, read with creds, when its SHA-256 is d; it reports
// whether it matched.
func (c *archiveCache) put(d string, creds *credentials, data []byte) bool {
	sum := sha256.Sum256(data)
	if normDigest(d) == "" || hex.EncodeToString(sum[:]) != normDigest(d) {
		return false
	}
	if c != nil {
		c.lru.Add(cacheKey(d, creds), data, int64(len(data)))
	}
	return true
}
