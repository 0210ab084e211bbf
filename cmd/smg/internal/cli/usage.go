package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// groupedUsage prints `smg launch --help`: the usage line, the examples, then the flags
// by group (groupOrder), and how the environment maps to flags.
func groupedUsage(c *cobra.Command) error {
	w := c.OutOrStdout()
	fmt.Fprintf(w, "Usage:\n  %s\n", c.UseLine())
	if len(c.Aliases) > 0 {
		fmt.Fprintf(w, "\nAliases:\n  %s\n", strings.Join(append([]string{c.Name()}, c.Aliases...), ", "))
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
	}
	seen := map[string]bool{}
	for _, g := range groupOrder {
		sub := pflag.NewFlagSet(g, pflag.ContinueOnError)
		sub.SortFlags = false
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if v := f.Annotations[groupAnnotation]; len(v) == 1 && v[0] == g {
				sub.AddFlag(f)
				seen[f.Name] = true
			}
		})
		if sub.HasFlags() {
			fmt.Fprintf(w, "\n%s:\n%s", g, sub.FlagUsagesWrapped(110))
		}
	}
	other := pflag.NewFlagSet("other", pflag.ContinueOnError)
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !seen[f.Name] {
			other.AddFlag(f)
		}
	})
	if other.HasFlags() {
		fmt.Fprintf(w, "\nOther:\n%s", other.FlagUsagesWrapped(110))
	}
	if c.Annotations[envNoteAnnotation] != "" {
		fmt.Fprintf(w, "\n%s\n", c.Annotations[envNoteAnnotation])
	}
	return nil
}

const envNoteAnnotation = "smg_env_note"

const launchEnvNote = `Environment:
  Every flag can also be set with SMG_<FLAG NAME IN UPPER SNAKE CASE>, e.g.
  SMG_HEALTH_CHECK_TIMEOUT_SECS=10 or SMG_PD_DISAGGREGATION=true. Repeatable flags take
  comma-separated values: SMG_PREFILL="http://p0:8000 8998,http://p1:8000 none".
  The command line wins over the environment. PORT (Cloud Run) overrides --port.`
