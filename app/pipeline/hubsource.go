package pipeline

import (
	"errors"
	"log/slog"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
)

// warnUnfetchable logs a WARN at start-up for each of --model-path and --tokenizer-path
// that is not a local path: SMG would fetch such a HuggingFace hub id (seed
// "Configuration": a tokenizer SMG loads at startup), this gateway cannot, so gRPC requests
// take their tokenizer from the workers instead (their tokenizer_path/model_path labels, then
// their GetTokenizer bundles), and fail with 500 tokenizer_not_found when none has one. A
// local path that cannot be read is reported likewise.
func warnUnfetchable(cfg config.Config, files text.Files, log *slog.Logger) {
	for _, f := range []struct{ flag, path string }{{"--model-path", cfg.ModelPath}, {"--tokenizer-path", cfg.TokenizerPath}} {
		if f.path == "" {
			continue
		}
		err := text.CheckLocal(files, f.path)
		switch {
		case errors.Is(err, text.ErrHubID):
			log.Warn(f.flag+" is not a local path and this gateway cannot fetch HuggingFace hub ids: gRPC requests take the tokenizer from the workers (tokenizer_path/model_path labels, then GetTokenizer) instead",
				"flag", f.flag, "path", f.path)
		case err != nil:
			log.Warn(f.flag+" cannot be read: gRPC requests take the tokenizer from the workers instead",
				"flag", f.flag, "path", f.path, "error", err.Error())
		}
	}
}
