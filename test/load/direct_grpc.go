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
	ids := d.Tokenizer.Encode(d.Workload.Prompt, false)
	maxTokens := uint32(d.Workload.MaxTokens)
	id := "direct-" + strconv.Itoa(w.ID) + "-" + strconv.FormatUint(w.Seq, 10) + "-" + strconv.FormatUint(rand.Uint64(), 36)
	rv := &ports.GRPCRendezvous{Host: d.Prefill.BootstrapHost(), Port: d.BootstrapPort, Room: int64(rand.Int32N(math.MaxInt32))}
	leg := ports.GRPCLeg{RequestID: id, Text: d.Workload.Prompt, InputIDs: ids, Rendezvous: rv,
		Sampling: ports.GRPCSampling{MaxTokens: &maxTokens, SkipSpecialTokens: true}}
	pre, dec := leg, leg
	pre.Worker, dec.Worker, dec.Stream = d.Prefill, d.Decode, d.Workload.Stream
	rctx := context.WithoutCancel(ctx)
	pst, err := d.Engines.Generate(rctx, pre)
	if err != nil {
		return Sample{}, fmt.Errorf("prefill: %w", err)
	}
	defer pst.Close()
	dst, err := d.Engines.Generate(rctx, dec)
	if err != nil {
		return Sample{}, fmt.Errorf("decode: %w", err)
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
	var s Sample
	var last time.Time
	for {
		ev, err := dst.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s, fmt.Errorf("decode: %w", err)
		}
		now := time.Now()
		if s.TTFT == 0 {
			s.TTFT = now.Sub(start)
		} else if d.Workload.Stream {
			w.rec.addGap(now.Sub(last))
		}
		last = now
		if ev.Complete && d.Workload.Stream {
			continue
		}
		for _, id := range ev.IDs {
			out, _ := dt.Step(id)
			s.Bytes += len(out)
		}
	}
	s.Bytes += len(dt.Flush())
	if err := <-pErr; err != nil {
		return s, fmt.Errorf("prefill: %w", err)
	}
	s.Latency = time.Since(start)
	return s, nil
}
