// Package kubernetes is the Kubernetes service-discovery adapter (seed "Kubernetes Service
// Discovery", smg-spec.md §10): a client-go pod informer, filtered server-side by the labels
// every role selector shares, turns the Running, Ready pods with an IP that match a role
// selector into worker targets, and hands the whole desired set to a callback on every
// change (coalesced) and on every resync, so a missed watch event heals.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// Pod annotations read by discovery (seed "Kubernetes Service Discovery").
const (
	// AnnotationBootstrapPort is a prefill (or encode) pod's bootstrap port, one integer.
	AnnotationBootstrapPort = "sglang.ai/bootstrap-port"
	// AnnotationKVConnector is a vLLM pod's KV connector, e.g. NixlConnector.
	AnnotationKVConnector = "smg.ai/kv-connector"
	// AnnotationKVEngineID is a vLLM pod's KV engine id (Mooncake handoffs need it).
	AnnotationKVEngineID = "smg.ai/kv-engine-id"
	// LabelPodName and LabelPodUID are the worker labels naming the pod (smg-spec.md §10).
	LabelPodName = "smg.ai/pod-name"
	LabelPodUID  = "smg.ai/pod-uid"
)

// Roles a target can have (the worker_type of its registration).
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
	RoleEncode  = "encode"
	RoleRegular = "regular"
)

// Defaults of Options.
const (
	DefaultPort     = 80
	DefaultResync   = 60 * time.Second
	DefaultCoalesce = 100 * time.Millisecond
)

// Options configure the watcher. Selectors are label sets: a pod matches one iff it carries
// every label of it; an empty selector matches nothing.
type Options struct {
	// Namespace to watch; "" = all namespaces.
	Namespace string
	// Port is the worker port on every pod (default 80).
	Port int
	// PD selects disaggregated roles: Encode, Prefill, Decode, in that precedence. Without
	// it only Regular is used.
	PD                               bool
	Prefill, Decode, Encode, Regular map[string]string
	// Kubeconfig is a kubeconfig file; "" = in-cluster config, else $KUBECONFIG / ~/.kube.
	Kubeconfig string
	// Config, when set, is used instead of Kubeconfig (tests).
	Config *rest.Config
	// Resync re-delivers every pod (default 60 s): the desired set is recomputed then too.
	Resync time.Duration
	// Coalesce is how long changes are gathered before the callback (default 100 ms).
	Coalesce time.Duration
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger
}

// Target is one worker a discovered pod contributes.
type Target struct {
	Namespace, PodName, PodUID string
	// URL is "http://<pod IP>:<port>".
	URL string
	// Role is RolePrefill, RoleDecode, RoleEncode or RoleRegular.
	Role string
	// BootstrapPort is the prefill/encode pod's bootstrap port; nil when not annotated (or
	// for decode and regular pods, which never get one).
	BootstrapPort *int
	// KVConnector and KVEngineID are the vLLM annotations ("" when absent).
	KVConnector, KVEngineID string
}

// Watcher watches pods and reports the desired targets.
type Watcher struct {
	o        Options
	onChange func([]Target)
	informer cache.SharedIndexInformer
	kick     chan struct{}
	stop     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

// New builds a watcher that calls onChange with the full desired set (sorted by URL) after
// every coalesced change. It does not contact the API server; Start does. Errors: no
// selector for the mode, an unusable kubeconfig.
func New(o Options, onChange func([]Target)) (*Watcher, error) {
	if o.Port <= 0 {
		o.Port = DefaultPort
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.Coalesce <= 0 {
		o.Coalesce = DefaultCoalesce
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if len(o.selectors()) == 0 {
		return nil, errors.New("service discovery needs a selector: --prefill-selector/--decode-selector/--encode-selector with --pd-disaggregation, else --selector")
	}
	cfg := o.Config
	if cfg == nil {
		var err error
		if cfg, err = restConfig(o.Kubeconfig); err != nil {
			return nil, err
		}
	}
	rc, err := podClient(cfg)
	if err != nil {
		return nil, err
	}
	w := &Watcher{o: o, onChange: onChange, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	common := labels.Set(o.common()).String()
	lw := cache.NewFilteredListWatchFromClient(rc, "pods", o.Namespace, // "" = all namespaces
		func(lo *metav1.ListOptions) { lo.LabelSelector = common })
	w.informer = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, o.Resync, cache.Indexers{})
	_, _ = w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.poke() },
		UpdateFunc: func(any, any) { w.poke() },
		DeleteFunc: func(any) { w.poke() },
	})
	return w, nil
}

// podClient is a REST client for core/v1 with a scheme holding only that group: the
// generated clientset (k8s.io/client-go/kubernetes) registers every API group at init, which
// costs every gateway process about 30 MB and 20 ms at start-up, discovery or not.
func podClient(cfg *rest.Config) (*rest.RESTClient, error) {
	sch := runtime.NewScheme()
	if err := corev1.AddToScheme(sch); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(sch, corev1.SchemeGroupVersion)
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(sch).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = "smg"
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return rc, nil
}

func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	return c, nil
}

func (w *Watcher) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Start starts the informer and waits until its first list is in and reported, at most
// until ctx ends: then it returns an error but keeps trying in the background (client-go
// retries with backoff) and reports the desired set once the list arrives. Changes are
// reported until Stop.
func (w *Watcher) Start(ctx context.Context) error {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.informer.Run(w.stop)
	}()
	synced := make(chan struct{})
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if !cache.WaitForCacheSync(w.stop, w.informer.HasSynced) {
			return
		}
		w.onChange(w.Desired())
		close(synced)
		for {
			select {
			case <-w.stop:
				return
			case <-w.kick:
			}
			select {
			case <-w.stop:
				return
			case <-time.After(w.o.Coalesce):
			}
			w.onChange(w.Desired())
		}
	}()
	select {
	case <-synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("service discovery: the pod list did not arrive yet (still trying): %w", context.Cause(ctx))
	}
}

// Stop ends the watch and waits for the callback goroutine. Safe to call twice.
func (w *Watcher) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.wg.Wait()
	})
}

// Desired returns the targets of the pods in the informer's cache, sorted by URL.
func (w *Watcher) Desired() []Target {
	var out []Target
	for _, obj := range w.informer.GetStore().List() {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		if t, ok := w.target(p); ok {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out
}

// target maps a pod to its worker, when it is eligible: a name, a UID, a pod IP, phase
// Running, condition Ready=True, not being deleted, and a role selector it matches.
func (w *Watcher) target(p *corev1.Pod) (Target, bool) {
	if p.Name == "" || p.UID == "" || p.Status.PodIP == "" || p.DeletionTimestamp != nil ||
		p.Status.Phase != corev1.PodRunning || !ready(p) {
		return Target{}, false
	}
	role := w.o.role(p.Labels)
	if role == "" {
		return Target{}, false
	}
	host := p.Status.PodIP
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	t := Target{Namespace: p.Namespace, PodName: p.Name, PodUID: string(p.UID), Role: role,
		URL:         "http://" + host + ":" + strconv.Itoa(w.o.Port),
		KVConnector: strings.TrimSpace(p.Annotations[AnnotationKVConnector]),
		KVEngineID:  strings.TrimSpace(p.Annotations[AnnotationKVEngineID])}
	if v, ok := p.Annotations[AnnotationBootstrapPort]; ok && (role == RolePrefill || role == RoleEncode) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 65535 {
			w.o.Logger.Warn("service discovery: bad bootstrap-port annotation ignored", "pod", p.Namespace+"/"+p.Name, "value", v)
		} else {
			t.BootstrapPort = &n
		}
	}
	return t, true
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

type selector struct {
	role string
	set  map[string]string
}

// selectors lists the non-empty selectors of the mode, in precedence order.
func (o Options) selectors() []selector {
	var all []selector
	if o.PD {
		all = []selector{{RoleEncode, o.Encode}, {RolePrefill, o.Prefill}, {RoleDecode, o.Decode}}
	} else {
		all = []selector{{RoleRegular, o.Regular}}
	}
	var out []selector
	for _, s := range all {
		if len(s.set) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// role returns the role of the first selector the labels match ("" = none).
func (o Options) role(l map[string]string) string {
	for _, s := range o.selectors() {
		if labels.SelectorFromSet(s.set).Matches(labels.Set(l)) {
			return s.role
		}
	}
	return ""
}

// common is the label set every non-empty selector shares: the server-side list filter.
func (o Options) common() map[string]string {
	sels := o.selectors()
	if len(sels) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range sels[0].set {
		out[k] = v
	}
	for _, s := range sels[1:] {
		for k, v := range out {
			if s.set[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// ParseSelector parses "key=value" pairs (each item may hold several, separated by commas
// or spaces) into a label set. Errors name the bad item.
func ParseSelector(items []string) (map[string]string, error) {
	out := map[string]string{}
	for _, it := range items {
		for _, kv := range strings.FieldsFunc(it, func(r rune) bool { return r == ',' || r == ' ' }) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("%q is not key=value", kv)
			}
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
