// Package cli is the smg command line: `smg launch`, `smg demo`, `smg doctor`, `smg probe`,
// `smg openapi` and `smg version`. Run is the whole program; cmd/smg/main.go only wires signals and stdio.
package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/app/version"
)

// Env looks up an environment variable (os.LookupEnv in production).
type Env func(string) (string, bool)

// Run executes the command line args (without the program name) and returns the exit code:
// 0 on success or after a clean SIGTERM drain, 2 for a bad flag, argument, environment
// value or configuration (one line on stderr naming the flag), 1 when start-up or the
// demo fleet fails, 3 when the SIGTERM drain's grace period ended with requests still in
// flight and cut them. ctx ends on SIGINT/SIGTERM.
func Run(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) int {
	root := newRoot(env, stdout, stderr)
	root.SetArgs(normalizeArgs(args))
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "smg: "+oneLine(err.Error()))
		return exitCodeFor(err)
	}
	return 0
}

// normalizeArgs accepts `smg --pd-disaggregation ...` as `smg launch ...` (SMG takes the
// launch flags without the subcommand too) and joins --prefill bootstrap ports.
func normalizeArgs(args []string) []string {
	if len(args) > 0 && strings.HasPrefix(args[0], "--") && args[0] != "--help" {
		args = append([]string{"launch"}, args...)
	}
	return joinPrefillPorts(args)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func newRoot(env Env, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "smg",
		Short: "smg is a gateway for prefill/decode disaggregated LLM serving",
		Long: `smg routes OpenAI-compatible requests to pairs of prefill and decode workers
(SGLang, vLLM), runs the KV-cache handoff each engine expects, and streams the decode
output back.

  smg launch --pd-disaggregation --prefill <url> [port|none] --decode <url>
  smg demo          run a simulated fleet on this machine and try it with curl
  smg doctor        explain why a running gateway's fleet would serve requests badly
  smg probe         exit 0 when the local gateway is ready (container health checks)`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	root.AddCommand(
		newLaunch(env, serve),
		newDemo(env, stdout),
		newOpenAPI(stdout),
		newProbe(env, stdout),
		newDoctor(env, stdout),
		newVersion(stdout),
	)
	return root
}

func newVersion(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the smg version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintf(stdout, "smg %s (%s, %s/%s)\n", version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}
