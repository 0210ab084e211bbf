package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
)

// DirectSGLang is the reference client with no gateway: it performs SGLang's parallel
// handoff itself (engines.md §2.1; seed "Parallel Dispatch") — the client body plus
// bootstrap_host, bootstrap_port and a freshly minted bootstrap_room, sent to the prefill
// and the decode at once — reads the decode response as its answer and drains the prefill.
type DirectSGLang struct {
	// PrefillURL and DecodeURL are the two workers' base URLs.
	PrefillURL, DecodeURL string
	// BootstrapHost and BootstrapPort are the prefill's bootstrap server.
	BootstrapHost string
	BootstrapPort int
	Workload      Workload
	Client        *http.Client
	req           *handoff.Request
	target        handoff.Target
}

// NewDirectSGLang builds a DirectSGLang target. Error: the workload body does not inspect.
func NewDirectSGLang(prefillURL, bootstrapHost string, bootstrapPort int, decodeURL string,
	wl Workload, hc *http.Client) (*DirectSGLang, error) {
	rq, err := handoff.Inspect(handoff.RouteCompletions, wl.Body())
	if err != nil {
		return nil, err
	}
	port := bootstrapPort
	return &DirectSGLang{PrefillURL: prefillURL, DecodeURL: decodeURL, BootstrapHost: bootstrapHost,
		BootstrapPort: bootstrapPort, Workload: wl, Client: hc, req: rq,
		target: handoff.Target{Host: bootstrapHost, Port: &port}}, nil
}

// Name returns "direct".
func (d *DirectSGLang) Name() string { return "direct" }

// Do runs one SGLang dispatch: both legs concurrently, the decode relayed to this client,
// the prefill drained to its end (closing it early would abort the KV transfer).
func (d *DirectSGLang) Do(ctx context.Context, start time.Time, w *Worker) (Sample, error) {
	w.Seq++
	legs := handoff.BootstrapPatch(d.req.Body, 0, d.target, nil)
	path := d.Workload.path()
	pErr := make(chan error, 1)
	go func() {
		resp, err := post(ctx, d.Client, d.PrefillURL+path, legs.Prefill, "")
		if err != nil {
			pErr <- fmt.Errorf("prefill: %w", err)
			return
		}
		if resp.StatusCode != http.StatusOK {
			pErr <- statusError("prefill", resp)
			return
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		pErr <- err
	}()
	s, err := d.decode(ctx, path, legs.Decode, start, w)
	if perr := <-pErr; err == nil && perr != nil {
		err = perr
	}
	return s, err
}

func (d *DirectSGLang) decode(ctx context.Context, path string, body []byte, start time.Time, w *Worker) (Sample, error) {
	resp, err := post(ctx, d.Client, d.DecodeURL+path, body, "")
	if err != nil {
		return Sample{}, fmt.Errorf("decode: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Sample{}, statusError("decode", resp)
	}
	return readResponse(resp, start, w, d.Workload.Stream)
}

// nixlTag tags a NIXL prefill leg (seed "Connector Modes"; engines.md §3.1).
var nixlTag = []byte(`{"` + wire.KVDoRemoteDecode + `":true,"` + wire.KVDoRemotePrefill + `":false}`)

// DirectNIXL is the reference client with no gateway for a vLLM NixlConnector pair: the
// sequential handoff (seed "Sequential Dispatch (vLLM)") — a one-token, non-streaming
// prefill tagged {"do_remote_decode":true,"do_remote_prefill":false}, then the client body
// plus the kv_transfer_params the prefill returned to the decode, both legs with the same
// X-Request-Id.
type DirectNIXL struct {
	PrefillURL, DecodeURL string
	Workload              Workload
	Client                *http.Client
	req                   *handoff.Request
	prefill               []byte
	idPrefix              string
}

// NewDirectNIXL builds a DirectNIXL target. Error: the workload body does not inspect.
func NewDirectNIXL(prefillURL, decodeURL string, wl Workload, hc *http.Client) (*DirectNIXL, error) {
	rq, err := handoff.Inspect(handoff.RouteCompletions, wl.Body())
	if err != nil {
		return nil, err
	}
	pb, err := handoff.PrefillBody(rq, nixlTag)
	if err != nil {
		return nil, err
	}
	return &DirectNIXL{PrefillURL: prefillURL, DecodeURL: decodeURL, Workload: wl, Client: hc,
		req: rq, prefill: pb, idPrefix: "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"}, nil
}

// Name returns "direct".
func (d *DirectNIXL) Name() string { return "direct" }

// errNoParams is a NIXL prefill answer without usable kv_transfer_params.
var errNoParams = errors.New("prefill returned no kv_transfer_params")

// Do runs one NIXL dispatch: prefill, harvest kv_transfer_params, decode.
func (d *DirectNIXL) Do(ctx context.Context, start time.Time, w *Worker) (Sample, error) {
	w.Seq++
	id := d.idPrefix + strconv.Itoa(w.ID) + "-" + strconv.FormatUint(w.Seq, 10)
	path := d.Workload.path()
	resp, err := post(ctx, d.Client, d.PrefillURL+path, d.prefill, id)
	if err != nil {
		return Sample{}, fmt.Errorf("prefill: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Sample{}, statusError("prefill", resp)
	}
	var pb bytes.Buffer
	_, err = pb.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return Sample{}, fmt.Errorf("prefill: read body: %w", err)
	}
	params := handoff.HarvestParams(pb.Bytes())
	if params == nil {
		return Sample{}, errNoParams
	}
	resp, err = post(ctx, d.Client, d.DecodeURL+path, handoff.DecodeBody(d.req, params), id)
	if err != nil {
		return Sample{}, fmt.Errorf("decode: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Sample{}, statusError("decode", resp)
	}
	return readResponse(resp, start, w, d.Workload.Stream)
}

var (
	_ Target = (*DirectSGLang)(nil)
	_ Target = (*DirectNIXL)(nil)
)
