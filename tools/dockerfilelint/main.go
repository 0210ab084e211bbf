// Command dockerfilelint runs BuildKit's Dockerfile lint (the rules behind `docker build
// --check`: dockerfile2llb.DockerfileLint) offline: base images are "resolved" by a stub that
// returns an empty image config, so no registry is contacted. It prints one line per warning
// (file:line: Rule: detail) and exits 1 when there is any, 2 when a file cannot be linted.
//
// Usage: go run . ../../deploy/Dockerfile [more Dockerfiles]
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerui"
	digest "github.com/opencontainers/go-digest"
)

// stubResolver answers every base image with an empty linux/amd64 config.
type stubResolver struct{}

func (stubResolver) ResolveImageConfig(_ context.Context, ref string, _ sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	return ref, "", []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:0000000000000000000000000000000000000000000000000000000000000000"]},"config":{}}`), nil
}

func lint(ctx context.Context, path string) (int, error) {
	dt, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	res, err := dockerfile2llb.DockerfileLint(ctx, dt, dockerfile2llb.ConvertOpt{
		Config:       dockerui.Config{BuildArgs: map[string]string{}},
		MetaResolver: stubResolver{},
		SourceMap:    &llb.SourceMap{Definition: &llb.Definition{}, Filename: path, Language: "Dockerfile", Data: dt},
	})
	if err != nil {
		return 0, err
	}
	if res.Error != nil {
		return 0, fmt.Errorf("%s: %s", path, res.Error.Message)
	}
	for _, w := range res.Warnings {
		line := 0
		if w.Location != nil && len(w.Location.Ranges) > 0 {
			line = int(w.Location.Ranges[0].Start.Line)
		}
		fmt.Printf("%s:%d: %s: %s\n", path, line, w.RuleName, w.Detail)
	}
	return len(res.Warnings), nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerfilelint Dockerfile...")
		os.Exit(2)
	}
	total := 0
	for _, p := range os.Args[1:] {
		n, err := lint(context.Background(), p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dockerfilelint:", err)
			os.Exit(2)
		}
		if n == 0 {
			fmt.Printf("%s: ok (BuildKit Dockerfile lint)\n", p)
		}
		total += n
	}
	if total > 0 {
		os.Exit(1)
	}
}
