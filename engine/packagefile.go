package engine

import (
	"fmt"
	"path"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// A package without a Kptfile keeps what the engine records about it (its
// upstream and lock, readiness gates and conditions) in cad's package file,
// revision.PackageFileName; see the root package's documentation.

// withPackageFile returns files with the root package file (created when
// missing, else edited in place) naming the package name and recording up
// and lock.
func withPackageFile(files revision.Files, name string, up *revision.Upstream, lock *revision.UpstreamLock) (revision.Files, error) {
	pf := revision.NewPackageFile(name)
	if data, ok := files.Get(revision.PackageFileName); ok {
		parsed, err := revision.ParsePackageFile(data)
		if err != nil {
			return revision.Files{}, fmt.Errorf("%w: %w", repository.ErrInvalidInput, err)
		}
		pf = parsed
	}
	pf.Name = name
	pf.Upstream, pf.UpstreamLock = up, lock
	data, err := pf.Encode()
	if err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.PackageFileName, data)
}

// upstreamRecord returns the upstream files record: the root Kptfile's,
// else the package file's; nil when there is none. It returns an error
// matching repository.ErrInvalidInput when the file it reads does not
// parse.
func upstreamRecord(files revision.Files) (*revision.Upstream, error) {
	info, err := revision.InfoFromFiles(files)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", repository.ErrInvalidInput, err)
	}
	return info.Upstream, nil
}

// editPackageFile applies edit, an edit of a Kptfile's readiness gates
// and conditions, to the package file of files (created when missing),
// for a package without a Kptfile.
func editPackageFile(files revision.Files, key revision.Key, edit func(*revision.Kptfile)) (revision.Files, error) {
	pf := revision.NewPackageFile(path.Base(key.Package))
	if data, ok := files.Get(revision.PackageFileName); ok {
		parsed, err := revision.ParsePackageFile(data)
		if err != nil {
			return revision.Files{}, err
		}
		pf = parsed
	}
	kf := revision.NewKptfile(pf.Name)
	kf.Info = &revision.PackageInfo{ReadinessGates: pf.ReadinessGates}
	kf.Status = &revision.Status{Conditions: pf.Conditions}
	edit(kf)
	pf.ReadinessGates, pf.Conditions = nil, nil
	if kf.Info != nil {
		pf.ReadinessGates = kf.Info.ReadinessGates
	}
	if kf.Status != nil {
		pf.Conditions = kf.Status.Conditions
	}
	data, err := pf.Encode()
	if err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.PackageFileName, data)
}
