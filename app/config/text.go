package config

import (
	"strings"

	"github.com/smg-go/smg/domain/respond"
)

// validateText checks the gRPC text-pipeline flags: --tool-call-parser and --reasoning-parser
// must name a parser the gateway has (empty: chosen by model family).
func (c Config) validateText() error {
	if c.ToolCallParser != "" {
		if _, err := respond.NewToolParser(c.ToolCallParser, nil); err != nil {
			return bad("--tool-call-parser", "unknown parser %q (supported: %s)", c.ToolCallParser, strings.Join(respond.ToolParserNames(), ", "))
		}
	}
	if c.ReasoningParser != "" {
		if _, err := respond.NewReasoningParser(c.ReasoningParser); err != nil {
			return bad("--reasoning-parser", "unknown parser %q (supported: %s)", c.ReasoningParser, strings.Join(respond.ReasoningParserNames(), ", "))
		}
	}
	return nil
}
