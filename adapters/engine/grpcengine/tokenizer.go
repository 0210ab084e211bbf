package grpcengine

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/worker"
)

// bundleStream adapts a GetTokenizer stream to text.BundleStream.
type bundleStream struct {
	st     grpc.ServerStreamingClient[commonpb.GetTokenizerChunk]
	cancel context.CancelFunc
}

func (b *bundleStream) Recv() ([]byte, string, error) {
	c, err := b.st.Recv()
	if err != nil {
		b.cancel()
		return nil, "", err
	}
	return c.GetData(), c.GetSha256(), nil
}

// FetchTokenizer opens w's GetTokenizer stream (the zip bundle of grpc.md §3.4) on its
// runtime's service. UNIMPLEMENTED wraps text.ErrBundleUnimplemented. The stream lives until
// ctx ends or it is drained.
func (p *Pool) FetchTokenizer(ctx context.Context, w worker.Worker) (text.BundleStream, error) {
	cctx, cancel := context.WithCancel(ctx)
	var st grpc.ServerStreamingClient[commonpb.GetTokenizerChunk]
	var err error
	switch w.Runtime {
	case worker.RuntimeSGLang:
		c, e := p.SGLang(w)
		if e != nil {
			cancel()
			return nil, e
		}
		st, err = c.GetTokenizer(cctx, &commonpb.GetTokenizerRequest{})
	case worker.RuntimeTokenSpeed:
		c, e := p.TokenSpeed(w)
		if e != nil {
			cancel()
			return nil, e
		}
		st, err = c.GetTokenizer(cctx, &commonpb.GetTokenizerRequest{})
	case worker.RuntimeVLLM:
		c, e := p.VLLM(w)
		if e != nil {
			cancel()
			return nil, e
		}
		st, err = c.GetTokenizer(cctx, &commonpb.GetTokenizerRequest{})
	default:
		cancel()
		return nil, fmt.Errorf("grpcengine: runtime %q: %w", w.Runtime, text.ErrBundleUnimplemented)
	}
	if err != nil {
		cancel()
		if status.Code(err) == codes.Unimplemented {
			return nil, fmt.Errorf("%w: %v", text.ErrBundleUnimplemented, err)
		}
		return nil, err
	}
	return &bundleStream{st: st, cancel: cancel}, nil
}
