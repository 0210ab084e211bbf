// Package wire holds every name that crosses a wire or a public contract: JSON fields the
// engines read, header names, worker label names, connector names and the gateway's error
// codes. Keeping them in one place means a rename is one edit and a grep finds every use.
//
// Sources: the seed (shared/seeds/000_b8ffe1c1d5752e9e.txt, sections "Parallel Dispatch",
// "Connector Modes", "Error Codes"), shared/reference/engines.md §2–§3 and
// shared/reference/smg-spec.md §2, §3, §6.
package wire

// SGLang bootstrap rendezvous fields, injected into the JSON body of both legs
// (engines.md §2.1; SGLang io_struct.GenerateReqInput). Scalars for one prompt, equal-length
// lists for a batch.
const (
	FieldBootstrapHost = "bootstrap_host" // string: the prefill URL's host
	FieldBootstrapPort = "bootstrap_port" // int or null: the prefill's registered bootstrap port
	FieldBootstrapRoom = "bootstrap_room" // int in [0, 2^63-1]
)

// DP-rank fields for --dp-aware SGLang legs (smg-spec.md §2.5.3).
const (
	FieldRoutedDPRank        = "routed_dp_rank"         // rank of the worker that receives the leg
	FieldDisaggPrefillDPRank = "disagg_prefill_dp_rank" // on the decode leg: the prefill's rank
)

// vLLM KV handoff fields (engines.md §3.1; seed "Connector Modes").
const (
	FieldKVTransferParams    = "kv_transfer_params"
	KVDoRemoteDecode         = "do_remote_decode"
	KVDoRemotePrefill        = "do_remote_prefill"
	KVTransferID             = "transfer_id"
	KVRemoteEngineID         = "remote_engine_id"
	KVRemoteBootstrapAddr    = "remote_bootstrap_addr"
	KVRemoteBlockIDs         = "remote_block_ids"
	KVRemoteHost             = "remote_host"
	KVRemotePort             = "remote_port"
	KVRemoteRequestID        = "remote_request_id"
	KVTPSize                 = "tp_size"
	DefaultBootstrapPort     = 8998 // engine default bootstrap port (SGLang, vLLM Mooncake)
	TransferIDPrefix         = "xfer-"
	FieldSimFault            = "sim_fault" // smg-sim per-request fault injection (issue #2)
	FieldStream              = "stream"
	FieldStreamOptions       = "stream_options"
	FieldN                   = "n"
	FieldMinTokens           = "min_tokens"
	FieldMaxTokens           = "max_tokens"
	FieldMaxCompletionTokens = "max_completion_tokens"
	FieldMaxOutputTokens     = "max_output_tokens"
	FieldModel               = "model"
)

// vLLM KV connector names as registered (`kv_connector` of POST /workers) and the
// `mode` label values of smg_pd_kv_connector_mode_total (seed "Monitoring").
const (
	ConnectorNixl     = "NixlConnector"
	ConnectorMooncake = "MooncakeConnector"
	ConnectorMoRIIO   = "MoRIIOConnector"

	ModeNixl        = "nixl"
	ModeMooncake    = "mooncake"
	ModeMoRIIO      = "moriio"
	ModePassthrough = "passthrough"
)

// Worker label names with a meaning to the gateway (seed "Prefill/Decode Pairing",
// "MoRI-IO"; smg-spec.md §3.3).
const (
	LabelKVConnector        = "kv_connector"
	LabelKVRole             = "kv_role"
	LabelKVEngineID         = "kv_engine_id"
	LabelBootstrapPort      = "bootstrap_port"
	LabelPairingProtocol    = "pairing_protocol"
	LabelTransferBackend    = "disaggregation_transfer_backend"
	LabelKVCacheDtype       = "kv_cache_dtype"
	LabelPageSize           = "page_size"
	LabelBlockSize          = "block_size"
	LabelAttentionBackend   = "attention_backend"
	LabelModelDtype         = "model_dtype"
	LabelVersion            = "version"
	LabelMaxRunningRequests = "max_running_requests"
	LabelDPSize             = "dp_size"
	// LabelDefaultSamplingParams is a gRPC worker's GetModelInfo
	// default_sampling_params_json: the JSON object of sampling defaults the decode worker
	// applies to knobs a client omitted (smg-spec.md §3.3, §9.2 step 6).
	LabelDefaultSamplingParams = "default_sampling_params_json"
	LabelTPSize                = "tp_size"
	LabelMoRIIOMode            = "moriio_mode"
	// MoRI-IO worker labels (seed "MoRI-IO (HTTP)" label table).
	LabelMoRIIOHost          = "moriio_host"
	LabelMoRIIOHandshakePort = "moriio_handshake_port"
	LabelMoRIIONotifyPort    = "moriio_notify_port"
	LabelMoRIIOWriteDispatch = "moriio_write_dispatch"
)

// MoRI-IO kv_transfer_params fields and label values (seed "Connector Modes" MoRIIOConnector
// row, "MoRI-IO (HTTP)"; vLLM MoRIIOConnector).
const (
	KVRemoteHandshakePort = "remote_handshake_port"
	KVRemoteNotifyPort    = "remote_notify_port"
	KVRemoteDPSize        = "remote_dp_size"
	KVRemoteDPSizeLocal   = "remote_dp_size_local"
	KVRemoteDPRank        = "remote_dp_rank"
	KVRemoteTPSize        = "remote_tp_size"
	FieldIgnoreEOS        = "ignore_eos"
	FieldStop             = "stop"
	FieldStopTokenIDs     = "stop_token_ids"
	FieldPromptEmbeds     = "prompt_embeds"
	FieldUseBeamSearch    = "use_beam_search"

	// DefaultMoRIIOHandshakePort and DefaultMoRIIONotifyPort are the engine defaults of
	// handshake_port and notify_port (seed label table).
	DefaultMoRIIOHandshakePort = 6301
	DefaultMoRIIONotifyPort    = 61005

	// MoRIIODispatchSequential and MoRIIODispatchConcurrent are the moriio_write_dispatch
	// values; sequential is the default.
	MoRIIODispatchSequential = "sequential"
	MoRIIODispatchConcurrent = "concurrent"

	// MoRIIOPrefillAddrMarker and MoRIIODecodeAddrMarker are the peer-address markers the
	// connector reads from a request id before the explicit fields.
	MoRIIOPrefillAddrMarker = "___prefill_addr_"
	MoRIIODecodeAddrMarker  = "___decode_addr_"
)

// HTTP header names.
const (
	HeaderRequestID    = "X-Request-Id"
	HeaderErrorCode    = "X-SMG-Error-Code"
	HeaderRoutedWorker = "X-Smg-Routed-Worker-Id"
	HeaderRoutingKey   = "X-Smg-Routing-Key"
	HeaderRetryAfter   = "Retry-After"
)

// Gateway error codes (seed "Error Codes"; smg-spec.md §6.4). The body shape is
// {"error":{"type":<errs.Type: invalid_request_error, server_error, …>,"code":<code>,"message":<text>,"param":null}}.
const (
	CodeNoAvailableWorkers     = "no_available_workers"
	CodeNoCompatiblePDPair     = "no_compatible_pd_pair"
	CodeOverloadShed           = "worker_overload_protection_shed"
	CodePrefillUpstreamError   = "prefill_upstream_error"
	CodePrefillRequestFailed   = "prefill_request_failed"
	CodePrefillReadFailed      = "prefill_read_failed"
	CodeDecodeRequestFailed    = "decode_request_failed"
	CodeMoRIIOPairMisconfig    = "moriio_pair_misconfigured"
	CodeModelNotFound          = "model_not_found"
	CodeInvalidRequest         = "invalid_request"
	CodeJSONParseError         = "json_parse_error"
	CodeNotSupported           = "not_supported"
	CodeRequestTimeout         = "request_timeout"
	CodeSerializationFailed    = "serialization_failed"
	CodeReadResponseFailed     = "read_response_failed"
	CodePDTransportFailed      = "PD disaggregation request failed" // literal, smg-spec.md §2.6
	CodeMoRIIORouteUnsupported = "moriio_route_unsupported"
	// CodeMoRIIOFanoutUnsupported (400): n>1, a batched prompt or prompt_embeds list, or
	// use_beam_search on a MoRI-IO pair.
	CodeMoRIIOFanoutUnsupported = "moriio_fanout_unsupported"
	// CodeMoRIIORequestIDReserved (400): a forwarded X-Request-Id or the body's request_id
	// carries the connector's peer-address markers.
	CodeMoRIIORequestIDReserved = "moriio_request_id_reserved"
	// CodeMoRIIOHandoffInvalid (502): the prefill returned no usable MoRI-IO handoff.
	CodeMoRIIOHandoffInvalid = "moriio_handoff_invalid"
	// CodeMoRIIOGRPCPDUnsupported (501): MoRI-IO PD over gRPC (only the HTTP PD router
	// speaks it).
	CodeMoRIIOGRPCPDUnsupported = "moriio_grpc_pd_unsupported"
	// CodeDecodeStreamFailed (in-stream error event, 502) ends a decode stream that broke
	// after the head was sent (smg-spec.md §6.5 shape).
	CodeDecodeStreamFailed = "decode_stream_failed"
	// CodeDecodeFirstByteTimeout (504; an in-stream error event once the head is out) is a
	// decode leg that sent no output within --first-byte-timeout-secs (issue #9). Not a
	// seed code.
	CodeDecodeFirstByteTimeout = "decode_first_byte_timeout"
	// CodeDecodeInvalidResponse (502) is a non-streaming decode answer with a JSON content
	// type whose body is not JSON (issue #9 "malformed engine JSON"). Not a seed code.
	CodeDecodeInvalidResponse = "decode_invalid_response"
	// CodePrefillInvalidResponse (502) is a prefill answer (body or stream event) that is
	// not a valid engine response; it cancels the decode leg at once. Not a seed code.
	CodePrefillInvalidResponse = "prefill_invalid_response"
	// CodePrefillTimeout (504) is a prefill leg that sent no answer within
	// --prefill-timeout-secs, or whose decode waited out its first-output deadline while
	// the prefill had not answered. Not a seed code.
	CodePrefillTimeout = "prefill_timeout"
	// CodeDecodeTimeout (504) is a non-streaming decode leg that sent no answer within
	// --decode-timeout-secs. Not a seed code.
	CodeDecodeTimeout = "decode_timeout"
	// CodePrefillKVTransferFailed and CodeDecodeKVTransferFailed (502) blame the leg that
	// had not answered when its peer engine reported the KV handoff failed waiting for it
	// (SGLang's KVTransferError; engines.md §2.4). Not seed codes.
	CodePrefillKVTransferFailed = "prefill_kv_transfer_failed"
	CodeDecodeKVTransferFailed  = "decode_kv_transfer_failed"
	// CodeAdmissionWindowExceeded (400): a gRPC dispatch needs more decode slots (one per
	// backend request: prompts × n) than the decode worker's whole admission window, so it
	// could never be admitted; not retryable. Not a seed code.
	CodeAdmissionWindowExceeded = "admission_window_exceeded"
	// CodeNotFound (404) and CodeMethodNotAllowed (405) answer a request no route matches.
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
)

// Worker-management API error codes (smg-spec.md §3.2, §3.4, §6.6). These endpoints answer
// with the worker-API shape {"error":"<text>","code":"<CODE>"}, not the OpenAI-style body.
const (
	CodeWorkerBadRequest    = "BAD_REQUEST"
	CodeWorkerNotFound      = "WORKER_NOT_FOUND"
	CodeWorkerAlreadyExists = "WORKER_ALREADY_EXISTS"
	CodeWorkerInternalError = "INTERNAL_SERVER_ERROR"
	// CodeWorkerMethodNotAllowed and CodeWorkerRouteNotFound answer a /workers request no
	// route matches, in the worker-API shape.
	CodeWorkerMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeWorkerRouteNotFound    = "NOT_FOUND"
)

// Prefill/decode pairing names (seed "Prefill/Decode Pairing": "What Is Compared",
// "Pairing Modes", "Explicit Pairing Protocol", "Verify Configuration").
const (
	// PairingModeOff, PairingModeLenient and PairingModeStrict are the --pd-pairing-mode values.
	PairingModeOff     = "off"
	PairingModeLenient = "lenient"
	PairingModeStrict  = "strict"

	// MoRIIOModeRead and MoRIIOModeWrite are the values of the moriio_mode label.
	MoRIIOModeRead  = "read"
	MoRIIOModeWrite = "write"

	// TransportMoRIIORead and TransportMoRIIOWrite are the pairing transports of a MoRI-IO
	// worker whose moriio_mode label is read or write.
	TransportMoRIIORead  = "moriio-read"
	TransportMoRIIOWrite = "moriio-write"

	// EnvPairingProtocol is the engine environment variable gRPC servicers report as the
	// explicit pairing protocol (lower precedence than the pairing_protocol label).
	EnvPairingProtocol = "SMG_PAIRING_PROTOCOL"

	// FieldPDPairing is the GET /workers field holding a prefill or decode worker's pairing key.
	FieldPDPairing = "pd_pairing"
)

// FakeBootstrapHost is SGLang's warmup bootstrap host (sglang/srt/disaggregation/utils.py
// FAKE_BOOTSTRAP_HOST): a prefill or decode leg that names it runs alone, with a fake KV
// sender or receiver, so no peer is needed. The gateway's canaries use it.
const FakeBootstrapHost = "2.2.2.2"

// CanaryRequestIDPrefix starts the request id (X-Request-Id, SGLang rid, the gRPC engine
// request id) of every canary the gateway sends, so engines' logs and the simulators tell a
// canary from a client's request.
const CanaryRequestIDPrefix = "smg-canary-"
