package text

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// BundleLimits bound a worker's GetTokenizer bundle.
type BundleLimits struct {
	// MaxBytes bounds the zip as streamed; MaxEntries its entries; MaxUncompressed the bytes
	// of all entries once inflated.
	MaxBytes, MaxEntries, MaxUncompressed int64
	// MaxEntryBytes bounds one entry once inflated; 0 = MaxUncompressed.
	MaxEntryBytes int64
	// MaxRatio bounds one entry's inflated size over its compressed size (a zip bomb
	// inflates a thousandfold; tokenizer JSON about fivefold); 0 = no ratio bound.
	MaxRatio int64
}

// DefaultBundleLimits are SMG's gateway-side limits (crates/grpc_client/src/tokenizer_bundle.rs;
// grpc.md §1.14): 200 MiB streamed, 50 entries, 500 MiB uncompressed; and the gateway's own
// per-entry bounds: 128 MiB inflated and a compression ratio of at most 100.
var DefaultBundleLimits = BundleLimits{MaxBytes: 200 << 20, MaxEntries: 50, MaxUncompressed: 500 << 20,
	MaxEntryBytes: 128 << 20, MaxRatio: 100}

// ErrBundle wraps every rejected GetTokenizer bundle.
var ErrBundle = errors.New("tokenizer bundle rejected")

// BundleStream is one GetTokenizer response stream: chunks of the zip (at most 64 KiB each),
// the lowercase hex SHA-256 of the whole zip on the last chunk only. Recv returns io.EOF after
// the last chunk.
type BundleStream interface {
	Recv() (data []byte, sha256Hex string, err error)
}

// BundleFetcher opens a worker's GetTokenizer stream. The gRPC engine adapter implements it;
// the caller bounds ctx (SMG: one 120 s timeout covers the RPC and the stream). An engine that
// does not implement the RPC returns an error wrapping ErrBundleUnimplemented.
type BundleFetcher interface {
	FetchTokenizerBundle(ctx context.Context, workerURL string) (BundleStream, error)
}

// ErrBundleUnimplemented marks a worker whose servicer has no GetTokenizer (gRPC
// UNIMPLEMENTED): the next worker is tried.
var ErrBundleUnimplemented = errors.New("GetTokenizer not implemented by the worker")

// ReadBundle drains a stream and returns the zip bytes. It rejects an empty stream, more than
// lim.MaxBytes, a missing terminal SHA-256 and a digest mismatch (compared
// case-insensitively); a SHA-256 on a chunk before the last is ignored, as only the final one
// counts.
func ReadBundle(s BundleStream, lim BundleLimits) ([]byte, error) {
	var buf bytes.Buffer
	var sum string
	chunks := 0
	for {
		data, sha, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		chunks++
		if int64(buf.Len()+len(data)) > lim.MaxBytes {
			return nil, fmt.Errorf("%w: larger than %d bytes", ErrBundle, lim.MaxBytes)
		}
		buf.Write(data)
		sum = sha
	}
	if chunks == 0 || buf.Len() == 0 {
		return nil, fmt.Errorf("%w: empty stream", ErrBundle)
	}
	if sum == "" {
		return nil, fmt.Errorf("%w: the last chunk carries no sha256", ErrBundle)
	}
	got := sha256.Sum256(buf.Bytes())
	if !strings.EqualFold(hex.EncodeToString(got[:]), sum) {
		return nil, fmt.Errorf("%w: sha256 mismatch (got %x, stream says %s)", ErrBundle, got, sum)
	}
	return buf.Bytes(), nil
}

// OpenBundle checks a bundle zip and returns its files in memory: at most lim.MaxEntries
// entries, lim.MaxUncompressed bytes in all and lim.MaxEntryBytes per entry, each entry
// inflating at most lim.MaxRatio times its compressed size, and only plain relative names
// (no "..", absolute paths, backslashes or drive letters). The sizes the zip declares are
// refused before inflating; inflation is bounded as well, since the declared sizes can lie.
// Directory entries are skipped.
func OpenBundle(zipBytes []byte, lim BundleLimits) (map[string][]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(zipBytes), int64(len(zipBytes)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a zip: %v", ErrBundle, err)
	}
	if int64(len(zr.File)) > lim.MaxEntries {
		return nil, fmt.Errorf("%w: %d entries (at most %d)", ErrBundle, len(zr.File), lim.MaxEntries)
	}
	entryMax := lim.MaxEntryBytes
	if entryMax <= 0 || entryMax > lim.MaxUncompressed {
		entryMax = lim.MaxUncompressed
	}
	for _, f := range zr.File { // every declared size before anything is inflated
		if err := checkEntryName(f.Name); err != nil {
			return nil, err
		}
		if err := checkEntrySize(f, entryMax, lim.MaxRatio); err != nil {
			return nil, err
		}
	}
	files := make(map[string][]byte, len(zr.File))
	var total int64
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		n := min(entryMax, lim.MaxUncompressed-total)
		if lim.MaxRatio > 0 {
			n = min(n, max(int64(f.CompressedSize64), 1)*lim.MaxRatio)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBundle, f.Name, err)
		}
		data, err := io.ReadAll(io.LimitReader(rc, n+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBundle, f.Name, err)
		}
		if int64(len(data)) > n {
			return nil, fmt.Errorf("%w: %s inflates past %d bytes (per entry %d, ratio %d, %d in all)",
				ErrBundle, f.Name, n, entryMax, lim.MaxRatio, lim.MaxUncompressed)
		}
		total += int64(len(data))
		files[path.Clean(f.Name)] = data
	}
	return files, nil
}

// checkEntrySize refuses an entry whose declared inflated size is above entryMax or above
// maxRatio times its compressed size.
func checkEntrySize(f *zip.File, entryMax, maxRatio int64) error {
	u, c := f.UncompressedSize64, f.CompressedSize64
	if u > uint64(entryMax) {
		return fmt.Errorf("%w: %s declares %d bytes uncompressed (at most %d per entry)", ErrBundle, f.Name, u, entryMax)
	}
	if maxRatio > 0 && u > max(c, 1)*uint64(maxRatio) {
		return fmt.Errorf("%w: %s inflates %d bytes from %d (compression ratio above %d: a zip bomb?)", ErrBundle, f.Name, u, c, maxRatio)
	}
	return nil
}

func checkEntryName(name string) error {
	bad := name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) ||
		(len(name) > 1 && name[1] == ':') || strings.ContainsRune(name, 0)
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%w: unsafe entry name %q", ErrBundle, name)
	}
	return nil
}
