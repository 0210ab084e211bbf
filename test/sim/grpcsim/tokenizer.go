package grpcsim

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
)

// TokenizerChunkBytes is the size of a GetTokenizer chunk (grpc.md §3.4).
const TokenizerChunkBytes = 64 << 10

// maxTokenizerFiles bounds the entries, as the gateway does (grpc.md §3.4).
const maxTokenizerFiles = 50

// tokenizerZip zips the regular files directly in dir (flat entries, deflate, sorted by
// name), as the servicers do. No path: FAILED_PRECONDITION; unreadable: INTERNAL.
func tokenizerZip(dir string) ([]byte, error) {
	if dir == "" {
		return nil, status.Error(codes.FailedPrecondition, "the engine has no tokenizer path")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "tokenizer path %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if len(names) == 0 || len(names) > maxTokenizerFiles {
		return nil, status.Errorf(codes.FailedPrecondition, "tokenizer path %s holds %d files (want 1..%d)", dir, len(names), maxTokenizerFiles)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, status.Errorf(codes.Internal, "tokenizer file %s: %v", n, err)
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate})
		if err == nil {
			_, err = w.Write(b)
		}
		if err != nil {
			return nil, status.Errorf(codes.Internal, "zip %s: %v", n, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, status.Errorf(codes.Internal, "zip: %v", err)
	}
	return buf.Bytes(), nil
}

// sendTokenizer streams the zip in TokenizerChunkBytes chunks; only the last carries the
// lowercase hex SHA-256 of the whole zip.
func (s *Server) sendTokenizer(send func(*commonpb.GetTokenizerChunk) error) error {
	s.c.tokenizer.Add(1)
	z, err := tokenizerZip(s.cfg.TokenizerPath)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(z)
	for off := 0; off < len(z); off += TokenizerChunkBytes {
		end := min(off+TokenizerChunkBytes, len(z))
		c := &commonpb.GetTokenizerChunk{Data: z[off:end]}
		if end == len(z) {
			c.Sha256 = hex.EncodeToString(sum[:])
		}
		if err := send(c); err != nil {
			return err
		}
	}
	return nil
}
