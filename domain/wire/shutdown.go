package wire

// CodeServerShuttingDown (503) answers a request the gateway cut because its shutdown grace
// period (--shutdown-grace-period-secs) ended before the request did: a non-streaming
// request not yet answered gets it as the error body, an open stream as a terminal SSE error
// event followed by data: [DONE]. The client may retry it on another replica.
const CodeServerShuttingDown = "server_shutting_down"
