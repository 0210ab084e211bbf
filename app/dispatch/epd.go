package dispatch

import (
	"net/http"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
)

// epdRefusal is the answer of a route EPD mode does not serve: /v1/responses is 501
// not_supported (seed "EPD"); nil for every other route or outside EPD mode.
func (d *Dispatcher) epdRefusal(route handoff.Route) error {
	if !d.cfg.EPDDisaggregation || route != handoff.RouteResponses {
		return nil
	}
	return errs.New(http.StatusNotImplemented, wire.CodeNotSupported, "EPD mode (--epd-disaggregation) does not serve /v1/responses")
}
