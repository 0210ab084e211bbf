package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app"
	"github.com/smg-go/smg/app/config"
)

const launchExample = `  # SGLang over HTTP: bootstrap ports follow the prefill URLs
  smg launch --pd-disaggregation \
    --prefill http://prefill-0:8000 8998 --prefill http://prefill-1:8000 8998 \
    --decode http://decode-0:8000 --decode http://decode-1:8000 \
    --prefill-policy cache_aware --decode-policy power_of_two

  # TokenSpeed EPD over gRPC: encode workers take each image, bootstrap ports follow the URLs
  smg launch --epd-disaggregation \
    --encode grpc://encode-0:50060 8995 \
    --prefill grpc://prefill-0:50061 8998 \
    --decode grpc://decode-0:50062 --model-path "$MODEL"

  # vLLM over HTTP: start without workers, then POST /workers with each kv_connector
  smg launch --pd-disaggregation --host 0.0.0.0 --port 30000`

// newLaunch is `smg launch` (alias `start`). run receives the parsed, validated config.
func newLaunch(env Env, run func(context.Context, config.Config) error) *cobra.Command {
	cfg := config.Default()
	var pprofAddr string
	cmd := &cobra.Command{
		Use:     "launch [flags]",
		Aliases: []string{"start"},
		Short:   "Start the gateway",
		Long:    "Start the gateway: serve the OpenAI-compatible API on --host:--port and route every request to a prefill/decode worker pair.",
		Example: launchExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q: flags start with --, and a --prefill URL may be followed only by a bootstrap port or none", args[0])
			}
			return nil
		},
		Annotations: map[string]string{envNoteAnnotation: launchEnvNote},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), env); err != nil {
				return err
			}
			if port, ok, err := portFromEnv(env); err != nil {
				return err
			} else if ok {
				if cmd.Flags().Changed("port") && cfg.Port != port {
					startupLog(cmd.ErrOrStderr()).Info(portNote(cfg.Port, port))
				}
				cfg.Port = port
			}
			if raw, ok := env("RUST_LOG"); ok && strings.TrimSpace(raw) != "" {
				level, applies, err := levelFromRustLog(raw)
				switch {
				case err != nil:
					return err
				case cmd.Flags().Changed("log-level"):
					startupLog(cmd.ErrOrStderr()).Info("RUST_LOG is set but --log-level (or SMG_LOG_LEVEL) wins", "rust_log", raw, "log_level", cfg.LogLevel)
				case !applies:
					startupLog(cmd.ErrOrStderr()).Info("RUST_LOG names no smg target; --log-level stays", "rust_log", raw, "log_level", cfg.LogLevel)
				default:
					cfg.LogLevel = level
				}
			}
			for _, name := range []string{"admin-api-key", "api-key"} {
				// An empty key given on purpose (often an unset variable expanded into the
				// command line) must not leave the API open without a word.
				if f := cmd.Flags().Lookup(name); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
					return usagef("invalid value for --%s: the key is empty (leave the flag out for an open API)", name)
				}
			}
			if cfg.EPDDisaggregation {
				cfg.PDDisaggregation = true // EPD is PD with an encode leg in front
			}
			if err := cfg.LoadSecrets(); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			return withPprof(pprofAddr, func() error { return run(cmd.Context(), cfg) })
		},
	}
	launchFlags(cmd.Flags(), &cfg)
	cmd.Flags().StringVar(&pprofAddr, "pprof-addr", "", "serve the Go profiler (/debug/pprof/) on this loopback `host:port` (empty: off)")
	_ = cmd.Flags().SetAnnotation("pprof-addr", groupAnnotation, []string{groupObservability})
	cmd.Flags().SortFlags = false
	cmd.SetUsageFunc(groupedUsage)
	return cmd
}

// ParseLaunch parses `smg launch` arguments (without "smg launch") and the environment into
// a validated config, exactly as `smg launch` does before starting. Errors are one line
// naming the flag (or variable).
func ParseLaunch(args []string, env Env) (config.Config, error) {
	var got config.Config
	cmd := newLaunch(env, func(_ context.Context, cfg config.Config) error {
		got = cfg
		return nil
	})
	cmd.SetArgs(joinPrefillPorts(args))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	if err := cmd.Execute(); err != nil {
		return config.Config{}, err
	}
	return got, nil
}

// runError is a failure after the configuration was accepted (exit code 1).
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// startTimeout bounds start-up (binding ports, starting the health checker).
const startTimeout = 15 * time.Second

// serve runs the gateway until ctx ends (SIGINT/SIGTERM), then drains: readiness 503 and
// --shutdown-drain-delay-secs of serving, then --shutdown-grace-period-secs for in-flight
// requests (app.Server). A clean drain returns nil (exit 0); a drain that had to cut
// requests at the grace deadline returns a *cutError (exit 3).
func serve(ctx context.Context, cfg config.Config) error {
	tuneGC(os.LookupEnv, cfg.GOGC, cfg.MemoryLimitMB, startupLog(os.Stderr))
	var logs *telemetry.LogWriter
	a := app.New(cfg, fx.Populate(&logs))
	defer closeLogs(logs)
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := a.Start(startCtx); err != nil {
		return &runError{fmt.Errorf("start: %w", err)}
	}
	<-ctx.Done()
	stopCtx, cancelStop := context.WithTimeout(context.Background(), cfg.ShutdownDrainDelay+cfg.ShutdownGracePeriod+15*time.Second)
	defer cancelStop()
	if err := a.Stop(stopCtx); err != nil {
		var cut *app.ShutdownCutError
		if errors.As(err, &cut) {
			return &cutError{err: fmt.Errorf("stop: %w", err)}
		}
		return &runError{fmt.Errorf("stop: %w", err)}
	}
	return nil
}

// closeLogs writes out the gateway's buffered log records before the process exits: Stop
// closes the log writer last, but skips the hooks left once its deadline passed, and a
// start that failed may not have reached them.
func closeLogs(logs *telemetry.LogWriter) {
	if logs != nil {
		_ = logs.Close()
	}
}

// cutError is a shutdown whose grace period ended with requests still in flight (exit code
// 3): the process stopped as asked, but clients saw 503 server_shutting_down.
type cutError struct{ err error }

func (e *cutError) Error() string { return e.err.Error() }
func (e *cutError) Unwrap() error { return e.err }

// startupLog writes the few lines the command line itself logs before the gateway's logger
// exists, as JSON lines like the gateway's.
func startupLog(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }
