package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// simProc is one running smg-sim process of the demo fleet.
type simProc struct {
	Role          string // "prefill" or "decode"
	URL           string // http://127.0.0.1:PORT
	BootstrapPort int    // 0 when the instance runs no bootstrap server

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	errs *tailBuffer
}

// readyLine matches smg-sim's ready line:
// "smg-sim <engine> <role> listening on http://HOST:PORT bootstrap=PORT engine_id=ID"
// (grpc://HOST:PORT with --transport grpc).
var readyLine = regexp.MustCompile(`listening on ((?:http|grpc)://\S+) bootstrap=(\d+)`)

// findSim locates the smg-sim binary: explicit path, next to this executable, then PATH.
func findSim(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "smg-sim")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("smg-sim"); err == nil {
		return p, nil
	}
	return "", errors.New("smg-sim not found next to the smg binary or on PATH (run `make build`, which puts both in bin/)")
}

// startSim runs bin with args and waits (up to timeout) for its ready line. On failure the
// process is killed and the error carries the end of its stderr.
func startSim(bin, role string, args []string, timeout time.Duration) (*simProc, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &simProc{Role: role, cmd: exec.Command(bin, args...), done: make(chan struct{}), errs: &tailBuffer{max: 2048}}
	p.cmd.Stdout = w
	p.cmd.Stderr = p.errs
	p.cmd.SysProcAttr = simProcAttr()
	if err := p.cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	w.Close() // the child holds the write end now; r reads EOF when it exits
	ready := make(chan []string, 1)
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- m:
				default:
				}
			}
		}
	}()
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case m := <-ready:
		p.URL = m[1]
		p.BootstrapPort, _ = strconv.Atoi(m[2])
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("smg-sim %s exited before it was ready: %s", role, p.errs.String())
	case <-timer.C:
		p.Stop(time.Second)
		return nil, fmt.Errorf("smg-sim %s not ready within %s: %s", role, timeout, p.errs.String())
	}
}

// Stop sends SIGTERM to the simulator's process group, waits up to grace, then SIGKILLs it,
// and returns once the process has exited.
func (p *simProc) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = signalGroup(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = signalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// fleet is the demo's simulators.
type fleet []*simProc

// startFleet starts 2 prefill + 2 decode simulators of engine on 127.0.0.1 with free ports,
// in parallel. SGLang prefills run a bootstrap server; vLLM instances use the NIXL connector.
// If any fails, the others are stopped and the first error returned.
func startFleet(ctx context.Context, bin, engine, model string) (fleet, error) {
	roles := []string{"prefill", "prefill", "decode", "decode"}
	procs := make(fleet, len(roles))
	errs := make([]error, len(roles))
	var wg sync.WaitGroup
	for i, role := range roles {
		args := []string{"--engine", engine, "--role", role, "--host", "127.0.0.1", "--port", "0", "--model", model}
		switch {
		case engine == "sglang" && role == "prefill":
			args = append(args, "--bootstrap-port", "0")
		case engine == "vllm":
			args = append(args, "--kv-connector", "nixl")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i], errs[i] = startSim(bin, role, args, 10*time.Second)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil || ctx.Err() != nil {
		procs.Stop()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return procs, nil
}

// Stop stops every simulator (in parallel) and waits for all of them.
func (f fleet) Stop() {
	var wg sync.WaitGroup
	for _, p := range f {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Stop(3 * time.Second)
		}()
	}
	wg.Wait()
}

// tailBuffer keeps the last max bytes written (a simulator's stderr, for error messages).
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(t.buf.String())
	if s == "" {
		return "(no output)"
	}
	return oneLine(s)
}
