package cli_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

func TestEPDFlagsParseTheSeedExample(t *testing.T) {
	t.Parallel()
	cfg, err := cli.ParseLaunch([]string{"--epd-disaggregation",
		"--encode", "grpc://encode-0:50060", "8995", "--encode", "grpc://encode-1:50060",
		"--prefill", "grpc://prefill-0:50061", "8998", "--decode", "grpc://decode-0:50062",
		"--model-path", "Qwen/Qwen2.5-VL-7B-Instruct"}, envOf(nil))
	require.NoError(t, err)
	assert.True(t, cfg.EPDDisaggregation)
	assert.True(t, cfg.PDDisaggregation, "EPD is PD with an encode leg")
	assert.Equal(t, []config.PrefillSpec{{URL: "grpc://encode-0:50060", BootstrapPort: port(8995)}, {URL: "grpc://encode-1:50060"}}, cfg.Encode)
	assert.Equal(t, []config.PrefillSpec{{URL: "grpc://prefill-0:50061", BootstrapPort: port(8998)}}, cfg.Prefill)
	assert.Equal(t, "consistent_hashing", cfg.EncodePolicy)

	cfg, err = cli.ParseLaunch([]string{"--epd-disaggregation", "--encode-policy", "round_robin",
		"--encode=grpc://e:1", "9000"}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "round_robin", cfg.EncodePolicy)
	assert.Equal(t, []config.PrefillSpec{{URL: "grpc://e:1", BootstrapPort: port(9000)}}, cfg.Encode)

	cfg, err = cli.ParseLaunch(nil, envOf(map[string]string{"SMG_EPD_DISAGGREGATION": "true",
		"SMG_ENCODE": "grpc://e0:1 8995,grpc://e1:1"}))
	require.NoError(t, err)
	assert.Equal(t, []config.PrefillSpec{{URL: "grpc://e0:1", BootstrapPort: port(8995)}, {URL: "grpc://e1:1"}}, cfg.Encode)
}

func TestEPDRefusedForHTTPWorkersAndBadValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"HTTP prefill", []string{"--epd-disaggregation", "--encode", "grpc://e:50060", "--prefill", "http://p:8000", "8998", "--decode", "grpc://d:50062"},
			"invalid value for --epd-disaggregation: EPD needs gRPC workers running TokenSpeed, but --prefill http://p:8000 is an HTTP worker"},
		{"HTTP decode", []string{"--epd-disaggregation", "--prefill", "grpc://p:1", "--decode", "http://d:8000"},
			"invalid value for --epd-disaggregation: EPD needs gRPC workers running TokenSpeed, but --decode http://d:8000 is an HTTP worker"},
		{"HTTP encode", []string{"--epd-disaggregation", "--encode", "https://e:8000"},
			"invalid value for --epd-disaggregation: EPD needs gRPC workers running TokenSpeed, but --encode https://e:8000 is an HTTP worker"},
		{"encode without EPD", []string{"--pd-disaggregation", "--encode", "grpc://e:1"}, "invalid value for --encode: needs --epd-disaggregation"},
		{"encode port out of range", []string{"--epd-disaggregation", "--encode", "grpc://e:1", "70000"},
			"invalid value for --encode: grpc://e:1: bootstrap port must be between 1 and 65535 (got 70000)"},
		{"encode policy not for the encode leg", []string{"--epd-disaggregation", "--encode-policy", "cache_aware"},
			`invalid value for --encode-policy: unknown policy "cache_aware" (expected random, round_robin or consistent_hashing)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := cli.Run(context.Background(), append([]string{"launch"}, tc.args...), envOf(nil), &out, &errOut)
			assert.Equal(t, 2, code)
			assert.Equal(t, "smg: "+tc.want+"\n", errOut.String())
		})
	}
}

func TestEPDDiscoveryNeedsAllThreeSelectors(t *testing.T) {
	t.Parallel()
	_, err := cli.ParseLaunch([]string{"--epd-disaggregation", "--service-discovery",
		"--prefill-selector", "app=ts", "role=prefill", "--decode-selector", "app=ts", "role=decode"}, envOf(nil))
	require.Error(t, err)
	assert.Equal(t, "invalid value for --encode-selector: EPD service discovery needs all three role selectors (--encode-selector, --prefill-selector, --decode-selector)", err.Error())
	cfg, err := cli.ParseLaunch([]string{"--epd-disaggregation", "--service-discovery", "--encode-selector", "app=ts", "role=encode",
		"--prefill-selector", "app=ts", "role=prefill", "--decode-selector", "app=ts", "role=decode"}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"app=ts", "role=encode"}, cfg.EncodeSelector)
}
