package refstore

import (
	"bufio"
	"bytes"
	"io"
)

// packedLineAt returns where the first ref line of sorted packed-refs f
// (size bytes, lines from body) whose name is target or after starts,
// size when there is none, and that line (without its line end): a
// binary search a block at a time, then the lines of the last two blocks
// (from where the search stopped at a line longer than a block). ok is
// false when a line it reads is not a ref line or a peeled value, or the
// file ends inside a line; err is a read's error.
func packedLineAt(f io.ReaderAt, body, size int64, target string) (at int64, line []byte, ok bool, err error) {
	const block = 4096
	buf := make([]byte, block)
	// lo is the start of a line; every ref before it sorts before target.
	lo, hi := body, size
	for hi-lo > 2*block {
		mid := lo + (hi-lo)/2
		n, err := f.ReadAt(buf, mid)
		if err != nil && n == 0 {
			return 0, nil, false, err
		}
		b := buf[:n]
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // inside a long line: the lines from lo are read in turn
		}
		// The first ref line starting after mid.
		start := mid + int64(i) + 1
		rest := b[i+1:]
		for len(rest) > 0 && rest[0] == '^' {
			j := bytes.IndexByte(rest, '\n')
			if j < 0 {
				break
			}
			start += int64(j) + 1
			rest = rest[j+1:]
		}
		j := bytes.IndexByte(rest, '\n')
		if j < 0 || start >= hi {
			// No whole line starts in [mid, hi) within the block: the
			// search goes on below mid, the lines from lo being read in
			// turn at the end (which finds those it skipped).
			hi = mid
			continue
		}
		line := rest[:j]
		if len(line) < 42 || line[40] != ' ' {
			return 0, nil, false, nil
		}
		if string(bytes.TrimSuffix(line[41:], []byte("\r"))) < target {
			lo = start
		} else {
			hi = mid
		}
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, lo, size-lo), 2*block)
	at = lo
	for {
		raw, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long := bytes.Clone(raw)
			for err == bufio.ErrBufferFull {
				raw, err = br.ReadSlice('\n')
				long = append(long, raw...)
			}
			raw = long
		}
		if err == io.EOF && len(raw) == 0 {
			return size, nil, true, nil
		}
		if err == io.EOF {
			return 0, nil, false, nil // cut short
		}
		if err != nil {
			return 0, nil, false, err
		}
		line := bytes.TrimSuffix(raw[:len(raw)-1], []byte("\r"))
		if len(line) == 0 || line[0] != '^' {
			if len(line) < 42 || line[40] != ' ' {
				return 0, nil, false, nil
			}
			if string(line[41:]) >= target {
				return at, line, true, nil
			}
		}
		at += int64(len(raw))
	}
}
