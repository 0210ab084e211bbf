package grpcsim_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

func TestFaultsTravelAsMetadata(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode})
	dc := sglangpb.NewSglangSchedulerClient(dial(t, d))
	with := func() *sglangpb.GenerateRequest { return sgReq("f", prompt(3), 4, true, nil) }
	for _, c := range []struct {
		fault string
		code  codes.Code
	}{
		{"decode:status:503", codes.Unavailable},
		{"any:status:429", codes.ResourceExhausted},
		{"decode:status:400", codes.InvalidArgument},
		{"decode:status:504", codes.DeadlineExceeded},
		{"decode:status:500", codes.Internal},
		{"decode:sidecar-timeout", codes.Unavailable},
		{"decode:reset", codes.Unavailable},
		{"decode:nonsense", codes.InvalidArgument},
	} {
		ctx := metadata.AppendToOutgoingContext(ctxT(t, 5*time.Second), grpcsim.FaultMetadata, c.fault)
		r := sgGenerate(ctx, dc, with())
		assert.Equal(t, c.code, status.Code(r.err), "%s: %v", c.fault, r.err)
		if c.fault == "decode:sidecar-timeout" {
			assert.Contains(t, status.Convert(r.err).Message(), "sidecar_timeout")
		}
	}
	ctx := metadata.AppendToOutgoingContext(ctxT(t, 5*time.Second), grpcsim.FaultMetadata, "prefill:status:500")
	assert.NoError(t, sgGenerate(ctx, dc, with()).err, "a fault for the other role is ignored")

	ctx = metadata.AppendToOutgoingContext(ctxT(t, 5*time.Second), grpcsim.FaultMetadata, "decode:die-after:2")
	r := sgGenerate(ctx, dc, with())
	assert.Error(t, r.err)
	assert.Len(t, r.chunks, 2, "two chunks, then the connection dies")

	ctx = metadata.AppendToOutgoingContext(ctxT(t, 5*time.Second), grpcsim.FaultMetadata, "decode:malformed")
	st, err := dc.Generate(ctx, with())
	require.NoError(t, err)
	m, err := st.Recv()
	require.NoError(t, err)
	assert.Nil(t, m.GetResponse(), "neither chunk nor complete")

	ctx = metadata.AppendToOutgoingContext(ctxT(t, 5*time.Second), grpcsim.FaultMetadata, "decode:oov-tokens")
	r = sgGenerate(ctx, dc, with())
	require.NoError(t, r.err)
	require.Len(t, r.chunks, 4)
	for _, c := range r.chunks {
		assert.Equal(t, []uint32{grpcsim.OOVTokenID}, c.GetTokenIds(), "every generated id is out of vocabulary")
	}

	short, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer stop()
	ctx = metadata.AppendToOutgoingContext(short, grpcsim.FaultMetadata, "decode:hang")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(sgGenerate(ctx, dc, with()).err))
	require.Eventually(t, func() bool { return d.Stats().Aborted >= 1 }, waitFor, tick)
}

func TestInstanceFault(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, Faults: []string{"status:503"}})
	r := sgGenerate(ctxT(t, 5*time.Second), sglangpb.NewSglangSchedulerClient(dial(t, d)), sgReq("i", prompt(2), 1, false, nil))
	assert.Equal(t, codes.Unavailable, status.Code(r.err))
	assert.Equal(t, int64(1), d.Stats().Errors)
	_, err := grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, Faults: []string{"status:200"}})
	assert.Error(t, err)
}

func TestGetTokenizerStreamsAZipInChunksWithTheShaLast(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 12<<10) // 192 KiB, compresses well
	rnd := make([]byte, 150<<10)                            // incompressible: the zip spans several chunks
	src := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		rnd[i] = byte(src.Uint32())
	}
	files := map[string][]byte{"tokenizer.json": big, "tokenizer_config.json": []byte(`{"chat_template":"x"}`), "vocab.bin": rnd}
	for n, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), b, 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, TokenizerPath: dir})
	st, err := sglangpb.NewSglangSchedulerClient(dial(t, d)).GetTokenizer(ctxT(t, 5*time.Second), &commonpb.GetTokenizerRequest{})
	require.NoError(t, err)
	var all []byte
	var chunks []*commonpb.GetTokenizerChunk
	for {
		c, err := st.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		chunks = append(chunks, c)
		all = append(all, c.GetData()...)
	}
	require.Greater(t, len(chunks), 1)
	for i, c := range chunks {
		assert.LessOrEqual(t, len(c.GetData()), grpcsim.TokenizerChunkBytes)
		if i < len(chunks)-1 {
			assert.Empty(t, c.GetSha256(), "only the last chunk carries the sha")
		}
	}
	sum := sha256.Sum256(all)
	assert.Equal(t, hex.EncodeToString(sum[:]), chunks[len(chunks)-1].GetSha256())
	zr, err := zip.NewReader(bytes.NewReader(all), int64(len(all)))
	require.NoError(t, err)
	require.Len(t, zr.File, 3, "flat entries, regular files only")
	for _, f := range zr.File {
		assert.Equal(t, zip.Deflate, f.Method)
		rc, err := f.Open()
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		_ = rc.Close()
		assert.Equal(t, files[f.Name], b, f.Name)
	}
}

func TestSimHealthToggleOverHTTP(t *testing.T) {
	t.Parallel()
	d := start(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode})
	c := tokenspeedpb.NewTokenSpeedSchedulerClient(dial(t, d))
	resp, err := http.Post(d.StatsURL()+"/sim/health?ok=false", "", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	h, err := c.HealthCheck(ctxT(t, 5*time.Second), &tokenspeedpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.False(t, h.GetHealthy())
}
