// Package store is the reference server's embedded object store: the
// Kubernetes-shaped objects that are not package revisions (Repository,
// PackageVariant, PackageVariantSet, Namespace) kept as one JSON file per
// object under a data directory, so that they survive a restart.
//
// Every write goes to a temporary file in the object's directory that is
// synced and then renamed over the old file, so a crash leaves either the old
// or the new object, never a torn one. The store assigns resourceVersions
// from one counter (persisted beside the objects), a UID and creation time
// on create, and bumps metadata.generation when the spec changes. It keeps a
// bounded log of recent changes so that a watch can resume from a recent
// resourceVersion.
//
// A Store is safe for concurrent use by many goroutines; it must be the only
// writer of its directory.
package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/configasdata/cad/repository"
)

// Errors of the store, tested with errors.Is.
var (
	// ErrNotFound: no object of that resource, namespace and name. It is
	// repository.ErrNotFound, cad's one "not found" sentinel; the store's
	// errors are *NotFoundError, which tell its "not found" from a
	// repository's.
	ErrNotFound = repository.ErrNotFound
	// ErrAlreadyExists: an object with that name exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: the object's resourceVersion is not the stored one.
	ErrConflict = errors.New("the object has been modified; please apply your changes to the latest version and try again")
	// ErrInvalid: a name or namespace that cannot be stored.
	ErrInvalid = errors.New("invalid")
	// ErrGone: a watch from a resourceVersion older than the change log.
	ErrGone = errors.New("too old resource version")
)

// DefaultLogSize is the number of recent changes a Store keeps for watches.
const DefaultLogSize = 1024

// EventType is ADDED, MODIFIED or DELETED.
type EventType string

// Event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
)

// Event is one change of an object. Object is a copy the receiver owns.
type Event struct {
	Type     EventType
	Resource string
	Object   *unstructured.Unstructured
	rv       uint64
}

type key struct{ resource, namespace, name string }

// Store keeps objects in a directory. Resources are opaque strings
// ("repositories", "namespaces", ...) chosen by the caller; a resource whose
// objects are cluster-scoped uses the namespace "".
type Store struct {
	dir string

	mu      sync.Mutex
	rv      uint64
	objs    map[key]*unstructured.Unstructured
	log     []Event // ring of recent events, oldest first
	logSize int
	subs    map[*subscriber]struct{}
	now     func() time.Time
}

// Options configure Open; nil means the defaults.
type Options struct {
	// LogSize is the number of recent changes kept for watches; default
	// DefaultLogSize.
	LogSize int
	// Now is the clock of creation timestamps; default time.Now.
	Now func() time.Time
}

// Open opens (creating it when missing) the store in dir and loads every
// object in it. Temporary files of an interrupted write are removed.
func Open(dir string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LogSize <= 0 {
		o.LogSize = DefaultLogSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &Store{dir: dir, objs: map[key]*unstructured.Unstructured{}, logSize: o.LogSize,
		subs: map[*subscriber]struct{}{}, now: o.Now}
	if data, err := os.ReadFile(filepath.Join(dir, "resourceversion")); err == nil {
		s.rv, _ = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".tmp-") {
			return os.Remove(p)
		}
		if !strings.HasSuffix(d.Name(), ".json") {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return fmt.Errorf("store: %s: %w", rel, err)
		}
		ns := parts[1]
		if ns == "_" {
			ns = ""
		}
		k := key{parts[0], ns, strings.TrimSuffix(parts[2], ".json")}
		if rv, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64); err == nil && rv > s.rv {
			s.rv = rv
		}
		s.objs[k] = u
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: load %s: %w", dir, err)
	}
	return s, nil
}

// ResourceVersion returns the store's current resourceVersion: that of the
// last change.
func (s *Store) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatUint(s.rv, 10)
}

// NotFoundError reports an object the store does not hold. It matches
// ErrNotFound (repository.ErrNotFound) with errors.Is; errors.As tells it
// from a repository's "not found".
type NotFoundError struct {
	Resource, Namespace, Name string
}

// Error returns `<resource> "<name>": not found`.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %q: %v", e.Resource, e.Name, ErrNotFound)
}

// Is reports whether target is ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Get returns a copy of the object, or a *NotFoundError (matching
// ErrNotFound).
func (s *Store) Get(resource, namespace, name string) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.objs[key{resource, namespace, name}]
	if !ok {
		return nil, &NotFoundError{Resource: resource, Namespace: namespace, Name: name}
	}
	return u.DeepCopy(), nil
}

// List returns copies of the objects of resource in namespace (every
// namespace when namespace is "*"), sorted by namespace and name, and the
// store's resourceVersion at the time of the list.
func (s *Store) List(resource, namespace string) ([]*unstructured.Unstructured, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*unstructured.Unstructured
	for k, u := range s.objs {
		if k.resource == resource && (namespace == "*" || k.namespace == namespace) {
			out = append(out, u.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out, strconv.FormatUint(s.rv, 10)
}

func checkNames(namespace, name string) error {
	if namespace != "" {
		if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
			return fmt.Errorf("%w: namespace %q: %s", ErrInvalid, namespace, strings.Join(errs, "; "))
		}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%w: name %q: %s", ErrInvalid, name, strings.Join(errs, "; "))
	}
	return nil
}

// Create stores obj as a new object of resource, with a new UID, creation
// time, generation 1 and resourceVersion, and returns what was stored.
// It returns errors matching ErrAlreadyExists or ErrInvalid (for a name or
// namespace that is not a DNS-1123 subdomain or label).
func (s *Store) Create(resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	if err := checkNames(ns, name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{resource, ns, name}
	if _, ok := s.objs[k]; ok {
		return nil, fmt.Errorf("%s %q: %w", resource, name, ErrAlreadyExists)
	}
	u := obj.DeepCopy()
	u.SetUID(types.UID(newUID()))
	u.SetCreationTimestamp(metav1.NewTime(s.now().UTC().Truncate(time.Second)))
	u.SetGeneration(1)
	u.SetDeletionTimestamp(nil)
	if err := s.writeLocked(k, u); err != nil {
		return nil, err
	}
	s.emitLocked(Added, resource, u)
	return u.DeepCopy(), nil
}

// Update replaces the stored object of resource with obj. When obj has a
// resourceVersion it must equal the stored one (else ErrConflict); empty
// means unconditional. UID and creation time are kept, generation is bumped
// when spec changed. It returns what was stored, or an error matching
// ErrNotFound (a *NotFoundError) or ErrConflict. When nothing changed,
// nothing is written.
func (s *Store) Update(resource string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{resource, obj.GetNamespace(), obj.GetName()}
	old, ok := s.objs[k]
	if !ok {
		return nil, &NotFoundError{Resource: resource, Namespace: k.namespace, Name: k.name}
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != old.GetResourceVersion() {
		return nil, fmt.Errorf("%s %q: %w", resource, k.name, ErrConflict)
	}
	u := obj.DeepCopy()
	u.SetUID(old.GetUID())
	u.SetCreationTimestamp(old.GetCreationTimestamp())
	u.SetGeneration(old.GetGeneration())
	u.SetResourceVersion(old.GetResourceVersion())
	if !equalJSON(old.Object["spec"], u.Object["spec"]) {
		u.SetGeneration(old.GetGeneration() + 1)
	}
	if equalJSON(old.Object, u.Object) {
		return old.DeepCopy(), nil
	}
	if err := s.writeLocked(k, u); err != nil {
		return nil, err
	}
	s.emitLocked(Modified, resource, u)
	return u.DeepCopy(), nil
}

// Delete removes the object of resource. When resourceVersion is not empty
// it must be the stored one (else ErrConflict). It returns the object as it
// was, or an error: a *NotFoundError (matching ErrNotFound), or one
// matching ErrConflict.
func (s *Store) Delete(resource, namespace, name, resourceVersion string) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{resource, namespace, name}
	old, ok := s.objs[k]
	if !ok {
		return nil, &NotFoundError{Resource: resource, Namespace: namespace, Name: name}
	}
	if resourceVersion != "" && resourceVersion != old.GetResourceVersion() {
		return nil, fmt.Errorf("%s %q: %w", resource, name, ErrConflict)
	}
	if err := os.Remove(s.path(k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: delete %s: %w", name, err)
	}
	delete(s.objs, k)
	s.rv++
	if err := s.writeRVLocked(); err != nil {
		return nil, err
	}
	gone := old.DeepCopy()
	gone.SetResourceVersion(strconv.FormatUint(s.rv, 10))
	s.emitLocked(Deleted, resource, gone)
	return old.DeepCopy(), nil
}

func (s *Store) path(k key) string {
	ns := k.namespace
	if ns == "" {
		ns = "_"
	}
	return filepath.Join(s.dir, k.resource, ns, k.name+".json")
}

// writeLocked assigns the next resourceVersion to u and writes it.
func (s *Store) writeLocked(k key, u *unstructured.Unstructured) error {
	next := s.rv + 1
	u.SetResourceVersion(strconv.FormatUint(next, 10))
	data, err := u.MarshalJSON()
	if err != nil {
		return fmt.Errorf("store: encode %s: %w", k.name, err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "  "); err == nil {
		buf.WriteByte('\n')
		data = buf.Bytes()
	}
	if err := writeAtomic(s.path(k), data); err != nil {
		return fmt.Errorf("store: write %s: %w", k.name, err)
	}
	s.rv = next
	s.objs[k] = u
	return s.writeRVLocked()
}

func (s *Store) writeRVLocked() error {
	if err := writeAtomic(filepath.Join(s.dir, "resourceversion"), []byte(strconv.FormatUint(s.rv, 10)+"\n")); err != nil {
		return fmt.Errorf("store: write resourceversion: %w", err)
	}
	return nil
}

// writeAtomic writes data to path through a synced temporary file renamed
// over it.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func newUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
