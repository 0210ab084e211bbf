package text_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
)

// chunkStream replays a GetTokenizer stream: 64 KiB chunks, the sha on the last one.
type chunkStream struct {
	chunks [][]byte
	shas   []string
	i      int
}

func (s *chunkStream) Recv() ([]byte, string, error) {
	if s.i >= len(s.chunks) {
		return nil, "", io.EOF
	}
	s.i++
	return s.chunks[s.i-1], s.shas[s.i-1], nil
}

func streamOf(zipBytes []byte, sha string) *chunkStream {
	s := &chunkStream{}
	for off := 0; off < len(zipBytes); off += 64 << 10 {
		s.chunks = append(s.chunks, zipBytes[off:min(off+64<<10, len(zipBytes))])
		s.shas = append(s.shas, "")
	}
	if len(s.shas) > 0 {
		s.shas[len(s.shas)-1] = sha
	}
	return s
}

func shaHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func makeZip(t testing.TB, files map[string][]byte, order ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range order {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write(files[name])
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func realBundle(t testing.TB) []byte {
	dir := texttest.Dir(t, texttest.Qwen3)
	files := map[string][]byte{
		"tokenizer.json":        mustRead(t, filepath.Join(dir, "tokenizer.json")),
		"tokenizer_config.json": mustRead(t, filepath.Join(dir, "tokenizer_config.json")),
	}
	return makeZip(t, files, "tokenizer.json", "tokenizer_config.json")
}

func TestBundleFromStreamLoadsTheModel(t *testing.T) {
	t.Parallel()
	z := realBundle(t)
	got, err := text.ReadBundle(streamOf(z, strings.ToUpper(shaHex(z))), text.DefaultBundleLimits)
	require.NoError(t, err, "the sha is compared case-insensitively")
	files, err := text.OpenBundle(got, text.DefaultBundleLimits)
	require.NoError(t, err)
	m, err := text.LoadModel(text.MapFiles(files), ".", text.LoadOptions{Now: fixedNow})
	require.NoError(t, err)
	assert.Equal(t, []uint32{9707, 11, 1879, 0}, m.Tokenizer.Encode("Hello, world!", false))
	require.NotNil(t, m.ChatTemplate, "the template comes from tokenizer_config.json")
	out, err := m.ChatTemplate.Render(chatRequests(t)["simple"].input())
	require.NoError(t, err)
	assert.Equal(t, "<|im_start|>user\nHello! Who are you?<|im_end|>\n<|im_start|>assistant\n", out)
}

func TestBundleStreamChecks(t *testing.T) {
	t.Parallel()
	z := makeZip(t, map[string][]byte{"tokenizer.json": []byte("{}")}, "tokenizer.json")
	cases := []struct {
		name   string
		stream *chunkStream
		lim    text.BundleLimits
		want   string
	}{
		{"empty stream", &chunkStream{}, text.DefaultBundleLimits, "empty stream"},
		{"no terminal sha", streamOf(z, ""), text.DefaultBundleLimits, "no sha256"},
		{"sha only on an earlier chunk", &chunkStream{chunks: [][]byte{z[:10], z[10:]}, shas: []string{shaHex(z), ""}}, text.DefaultBundleLimits, "no sha256"},
		{"sha mismatch", streamOf(z, shaHex([]byte("other"))), text.DefaultBundleLimits, "mismatch"},
		{"too large", streamOf(z, shaHex(z)), text.BundleLimits{MaxBytes: int64(len(z) - 1), MaxEntries: 50, MaxUncompressed: 1 << 20}, "larger than"},
	}
	for _, c := range cases {
		_, err := text.ReadBundle(c.stream, c.lim)
		require.Error(t, err, c.name)
		assert.ErrorIs(t, err, text.ErrBundle, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}

func TestBundleEntryChecks(t *testing.T) {
	t.Parallel()
	many := map[string][]byte{}
	var names []string
	for i := 0; i < 51; i++ {
		n := "f" + strings.Repeat("x", i) + ".json"
		many[n], names = []byte("{}"), append(names, n)
	}
	cases := []struct {
		name string
		zip  []byte
		lim  text.BundleLimits
		want string
	}{
		{"traversal", makeZip(t, map[string][]byte{"../evil.json": nil}, "../evil.json"), text.DefaultBundleLimits, "unsafe entry"},
		{"nested traversal", makeZip(t, map[string][]byte{"a/../../evil": nil}, "a/../../evil"), text.DefaultBundleLimits, "unsafe entry"},
		{"absolute", makeZip(t, map[string][]byte{"/etc/passwd": nil}, "/etc/passwd"), text.DefaultBundleLimits, "unsafe entry"},
		{"backslash", makeZip(t, map[string][]byte{`..\evil`: nil}, `..\evil`), text.DefaultBundleLimits, "unsafe entry"},
		{"51 entries", makeZip(t, many, names...), text.DefaultBundleLimits, "51 entries"},
		{"inflates past the limit", makeZip(t, map[string][]byte{"tokenizer.json": bytes.Repeat([]byte("a"), 4096)}, "tokenizer.json"),
			text.BundleLimits{MaxBytes: 1 << 20, MaxEntries: 50, MaxUncompressed: 4095}, "uncompressed"},
		{"not a zip", []byte("PK garbage"), text.DefaultBundleLimits, "not a zip"},
	}
	for _, c := range cases {
		_, err := text.OpenBundle(c.zip, c.lim)
		require.Error(t, err, c.name)
		assert.ErrorIs(t, err, text.ErrBundle, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}

// deflated is one entry's raw deflate stream of data.
func deflated(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, flate.BestSpeed)
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// zipBomb is a bundle whose tokenizer.json inflates size zero bytes from a few KB; declared
// is the uncompressed size its header claims (a liar claims less).
func zipBomb(t testing.TB, size, declared int) []byte {
	t.Helper()
	raw := deflated(t, make([]byte, size))
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "tokenizer.json", Method: zip.Deflate,
		CompressedSize64: uint64(len(raw)), UncompressedSize64: uint64(declared), CRC32: crc32.ChecksumIEEE(make([]byte, size))})
	require.NoError(t, err)
	_, err = w.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// A zip bomb under the 500 MiB total is refused from its declared sizes (per entry, ratio)
// before anything is inflated, and bounded while inflating when its header lies.
func TestBundleZipBombBounds(t *testing.T) {
	t.Parallel()
	bomb := zipBomb(t, 1<<20, 400<<20) // only the header is read

	_, err := text.OpenBundle(bomb, text.DefaultBundleLimits)
	require.ErrorIs(t, err, text.ErrBundle)
	assert.Contains(t, err.Error(), "at most 134217728 per entry")

	ratio := zipBomb(t, 8<<20, 8<<20)
	_, err = text.OpenBundle(ratio, text.DefaultBundleLimits)
	require.ErrorIs(t, err, text.ErrBundle)
	assert.Contains(t, err.Error(), "compression ratio above 100")

	noRatio := text.DefaultBundleLimits
	noRatio.MaxRatio = 0
	files, err := text.OpenBundle(ratio, noRatio)
	require.NoError(t, err, "the same entry passes without the ratio bound")
	assert.Len(t, files["tokenizer.json"], 8<<20)

	// The header claims a ratio of 50; inflation stops at the ratio bound.
	liar := zipBomb(t, 8<<20, 0)
	c := len(liar) - 200 // about the compressed size
	liar = zipBomb(t, 8<<20, c*50)
	_, err = text.OpenBundle(liar, text.DefaultBundleLimits)
	require.ErrorIs(t, err, text.ErrBundle)
}
