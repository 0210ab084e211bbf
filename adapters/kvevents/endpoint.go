package kvevents

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Endpoints is where one worker's (one DP rank's) ZMQ KV events come from.
type Endpoints struct {
	// Endpoint is the PUB endpoint to dial, ReplayEndpoint the ROUTER one ("" if none).
	Endpoint, ReplayEndpoint string
	// Topic is the SUB filter ("" subscribes to everything).
	Topic string
}

// ResolveZMQ reads a worker's event endpoints from its labels (wire.LabelKVEventsEndpoint,
// LabelKVEventsReplayEndpoint, LabelKVEventsTopic). ok is false when the worker names no
// endpoint. A wildcard host ("*", "0.0.0.0", "::" — an engine's bind address copied as is)
// becomes the worker URL's host, and a --dp-aware rank r moves tcp ports to port + r, as
// the engines' DP ranks publish (reference §1.2, §2.1). Errors: an endpoint that is not
// tcp://host:port, inproc:// or ipc://, or a rank offset that cannot apply.
func ResolveZMQ(w worker.Worker) (eps Endpoints, ok bool, err error) {
	ep := strings.TrimSpace(w.Labels[wire.LabelKVEventsEndpoint])
	if ep == "" {
		return Endpoints{}, false, nil
	}
	rank := 0
	if w.DPRank != nil {
		rank = *w.DPRank
	}
	host := strings.Trim(w.BootstrapHost(), "[]")
	if eps.Endpoint, err = resolveOne(ep, host, rank); err != nil {
		return Endpoints{}, false, err
	}
	if r := strings.TrimSpace(w.Labels[wire.LabelKVEventsReplayEndpoint]); r != "" {
		if eps.ReplayEndpoint, err = resolveOne(r, host, rank); err != nil {
			return Endpoints{}, false, err
		}
	}
	eps.Topic = w.Labels[wire.LabelKVEventsTopic]
	return eps, true, nil
}

func resolveOne(ep, workerHost string, rank int) (string, error) {
	if rest, ok := strings.CutPrefix(ep, "tcp://"); ok {
		h, p, err := net.SplitHostPort(rest)
		if err != nil {
			return "", fmt.Errorf("kvevents: endpoint %q: %v", ep, err)
		}
		switch h {
		case "*", "0.0.0.0", "::", "":
			h = workerHost
		}
		ep = "tcp://" + net.JoinHostPort(h, p)
	}
	return OffsetPort(ep, rank)
}

// OffsetPort is endpoint as data-parallel rank rank publishes it: tcp ports + rank,
// inproc names + "_dp<rank>", unchanged for rank 0 (vLLM kv_events.py, reference §1.2).
// Errors: a negative rank, a tcp endpoint without a numeric port or past 65535, an ipc or
// other endpoint with rank > 0 (no offset rule is known for it).
func OffsetPort(endpoint string, rank int) (string, error) {
	if rank < 0 {
		return "", fmt.Errorf("kvevents: negative DP rank %d", rank)
	}
	if rest, ok := strings.CutPrefix(endpoint, "tcp://"); ok {
		h, p, err := net.SplitHostPort(rest)
		if err != nil {
			return "", fmt.Errorf("kvevents: endpoint %q: %v", endpoint, err)
		}
		port, err := strconv.Atoi(p)
		if err != nil || port < 1 || port+rank > 65535 {
			return "", fmt.Errorf("kvevents: endpoint %q: port %q + rank %d is not a valid port", endpoint, p, rank)
		}
		return "tcp://" + net.JoinHostPort(h, strconv.Itoa(port+rank)), nil
	}
	if rank == 0 {
		return endpoint, nil
	}
	if strings.HasPrefix(endpoint, "inproc://") {
		return endpoint + "_dp" + strconv.Itoa(rank), nil
	}
	return "", fmt.Errorf("kvevents: endpoint %q: no DP-rank offset rule for this transport", endpoint)
}

// LabelsFromAnnotations returns the worker labels a pod's annotations
// (wire.AnnotationKVEventsEndpoint, AnnotationKVEventsReplayEndpoint) stand for, for
// Kubernetes discovery to merge into the worker's labels.
func LabelsFromAnnotations(ann map[string]string) map[string]string {
	out := map[string]string{}
	if v := strings.TrimSpace(ann[wire.AnnotationKVEventsEndpoint]); v != "" {
		out[wire.LabelKVEventsEndpoint] = v
	}
	if v := strings.TrimSpace(ann[wire.AnnotationKVEventsReplayEndpoint]); v != "" {
		out[wire.LabelKVEventsReplayEndpoint] = v
	}
	return out
}
