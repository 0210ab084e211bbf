package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// DirectGRPCSGLang is the reference client of the gRPC benchmark: it does what the gateway
// does for an SGLang gRPC PD completion, without the gateway — tokenize the prompt, mint a
// bootstrap room, open both Generate RPCs at once, detokenize the decode's ids — so the
// comparison isolates the gateway's own cost.
type DirectGRPCSGLang struct {
	Engines         ports.GRPCGenerator
	Prefill, Decode *worker.Live
	BootstrapPort   int
	Tokenizer       *text.Tokenizer
	Workload        Workload
}

// Name returns "direct".
func (d *DirectGRPCSGLang) Name() string { return "direct" }

// Do runs one dispatch; the sample's Bytes are the detokenized text's.
func (d *DirectGRPCSGLang) Do(ctx context.Context, start time.Time, w *Worker) (Sample, error) {
	w.Seq++
	id := "direct-" + strconv.Itoa(w.ID) + "-" + strconv.FormatUint(w.Seq, 10) + "-" + strconv.FormatUint(rand.Uint64(), 36)
	var s Sample
	var last time.Time
	err := d.generate(ctx, id, d.Workload.Prompt, d.Workload.MaxTokens, d.Workload.Stream, func() {
		now := time.Now()
		if s.TTFT == 0 {
			s.TTFT = now.Sub(start)
		} else if d.Workload.Stream {
			w.rec.addGap(now.Sub(last))
		}
		last = now
	}, func(piece string) { s.Bytes += len(piece) }, func() {})
	if err != nil {
		return s, err
	}
	s.Latency = time.Since(start)
	return s, nil
}

// generate runs one prompt through both legs: for each decode message it calls msg as the
// message arrives, out with the text of each of its token ids (a streamed decode's closing
// message carries no text of its own), then done; at the end out with the detokenizer's
// rest. maxTokens is the output budget; stream asks the decode to stream. The error names
// the leg that failed.
func (d *DirectGRPCSGLang) generate(ctx context.Context, id, prompt string, maxTokens int, stream bool, msg func(), out func(piece string), done func()) error {
	ids := d.Tokenizer.Encode(prompt, false)
	mt := uint32(maxTokens)
	rv := &ports.GRPCRendezvous{Host: d.Prefill.BootstrapHost(), Port: d.BootstrapPort, Room: int64(rand.Int32N(math.MaxInt32))}
	leg := ports.GRPCLeg{RequestID: id, Text: prompt, InputIDs: ids, Rendezvous: rv,
		Sampling: ports.GRPCSampling{MaxTokens: &mt, SkipSpecialTokens: true}}
	pre, dec := leg, leg
	pre.Worker, dec.Worker, dec.Stream = d.Prefill, d.Decode, stream
	rctx := context.WithoutCancel(ctx)
	pst, err := d.Engines.Generate(rctx, pre)
	if err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	defer pst.Close()
	dst, err := d.Engines.Generate(rctx, dec)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	defer dst.Close()
	pErr := make(chan error, 1)
	go func() {
		for {
			if _, err := pst.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				pErr <- err
				return
			}
		}
	}()
	dt := text.NewDecoder(d.Tokenizer, text.DecoderOptions{SkipSpecialTokens: true})
	for {
		ev, err := dst.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		msg()
		if !ev.Complete || !stream {
			for _, id := range ev.IDs {
				piece, _ := dt.Step(id)
				out(piece)
			}
		}
		done()
	}
	out(dt.Flush())
	if err := <-pErr; err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	return nil
}
