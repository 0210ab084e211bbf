package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/smg-go/smg/app/config"
)

// secsValue is a pflag.Value for a `--*-secs` flag: a number of seconds (fractions allowed)
// stored as a time.Duration.
type secsValue struct{ d *time.Duration }

func (v *secsValue) String() string {
	if v.d == nil {
		return "0"
	}
	return strconv.FormatFloat(v.d.Seconds(), 'f', -1, 64)
}

func (v *secsValue) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return errors.New("expected a number of seconds")
	}
	if f > math.MaxInt64/float64(time.Second) {
		return errors.New("too many seconds")
	}
	*v.d = time.Duration(f * float64(time.Second))
	return nil
}

func (v *secsValue) Type() string { return "seconds" }

// prefillValue is the repeatable --prefill value. Each Set takes "URL", "URL PORT" or
// "URL none" (the hand-parser joins a separate port argument to its URL with a space;
// SMG_PREFILL entries use the same form).
type prefillValue struct {
	specs *[]config.PrefillSpec
}

func (v *prefillValue) String() string {
	if v.specs == nil || len(*v.specs) == 0 {
		return ""
	}
	parts := make([]string, 0, len(*v.specs))
	for _, p := range *v.specs {
		if p.BootstrapPort != nil {
			parts = append(parts, p.URL+" "+strconv.Itoa(*p.BootstrapPort))
		} else {
			parts = append(parts, p.URL)
		}
	}
	return strings.Join(parts, ",")
}

func (v *prefillValue) Set(s string) error {
	fields := strings.Fields(s)
	switch len(fields) {
	case 1:
		*v.specs = append(*v.specs, config.PrefillSpec{URL: fields[0]})
		return nil
	case 2:
		port, err := parseBootstrapPort(fields[1])
		if err != nil {
			return fmt.Errorf("%s: %w", fields[0], err)
		}
		*v.specs = append(*v.specs, config.PrefillSpec{URL: fields[0], BootstrapPort: port})
		return nil
	}
	return errors.New("expected a worker url, optionally followed by a bootstrap port or none")
}

func (v *prefillValue) Type() string { return "url [port|none]" }

// parseBootstrapPort reads the optional second --prefill value: "none" (any case) is no
// port, digits are a port in 1..65535 (smg-spec.md §8.1).
func parseBootstrapPort(s string) (*int, error) {
	if strings.EqualFold(s, "none") {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || !isDigits(s) {
		return nil, fmt.Errorf("%q is not a bootstrap port (expected 1-65535 or none)", s)
	}
	if n < 1 || n > 65535 {
		return nil, fmt.Errorf("bootstrap port must be between 1 and 65535 (got %d)", n)
	}
	return &n, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
