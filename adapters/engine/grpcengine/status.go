package grpcengine

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// HTTPStatus maps a gRPC status code to the HTTP status the gateway answers with and the
// circuit breakers record (grpc.md §3.3; SMG routers/grpc/utils/tonic_ext.rs). It is the
// only such mapping in the gateway.
func HTTPStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.Canceled:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Unimplemented:
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

// ErrorStatus is HTTPStatus for an RPC error: 200 for nil; the mapped status of a gRPC
// status error, except 413 for a RESOURCE_EXHAUSTED that is a message-size limit
// (IsMessageTooLarge), where the same request would fail on every worker; 504 for a bare context.DeadlineExceeded and 400 for context.Canceled (as
// grpc-go reports them); 500 for anything else. The message is the status message (or
// err's text).
func ErrorStatus(err error) (int, string) {
	if err == nil {
		return http.StatusOK, ""
	}
	if s, ok := status.FromError(err); ok {
		if IsMessageTooLarge(err) {
			return http.StatusRequestEntityTooLarge, "request too large for the engine's gRPC message limit: " + s.Message()
		}
		return HTTPStatus(s.Code()), s.Message()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, err.Error()
	case errors.Is(err, context.Canceled):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

// IsMessageTooLarge reports a RESOURCE_EXHAUSTED status raised by a gRPC message-size limit
// rather than by engine load: grpc-go's "received message larger than max (N vs. M)" (the
// receiver's MaxRecvMsgSize, 4 MiB by default) and "trying to send message larger than max
// (N vs. M)" (the sender's MaxSendMsgSize), N and M in bytes. Retrying such a request on
// another worker with the same limit cannot succeed.
func IsMessageTooLarge(err error) bool {
	s, ok := status.FromError(err)
	if !ok || s.Code() != codes.ResourceExhausted {
		return false
	}
	m := s.Message()
	return strings.Contains(m, "received message larger than max") ||
		strings.Contains(m, "trying to send message larger than max")
}
