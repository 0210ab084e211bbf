package load

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one child process of a benchmark fleet (smg-sim or smg). Its stdout and
// stderr are read continuously (the last few KB kept for error messages) so it never
// blocks on a full pipe.
type Process struct {
	// Name labels the process in errors ("sglang prefill", "gateway").
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	tail *tailBuffer
}

// StartProcess runs bin with args (env added to the inherited environment) and waits up to
// timeout for a line of its merged stdout/stderr that matches ready; it returns the process
// and the line's submatches. On failure the process is stopped and the error carries its
// last output. Other benchmarks (test/fleetbench) start their processes with it.
func StartProcess(name, bin string, args, env []string, ready *regexp.Regexp, timeout time.Duration) (*Process, []string, error) {
	return startProcess(name, bin, args, env, ready, timeout)
}

// startProcess runs bin with args (env added to the inherited environment) and waits up to
// timeout for a line of its merged stdout/stderr that matches ready; it returns the
// submatches. On failure the process is stopped and the error carries its last output.
func startProcess(name, bin string, args, env []string, ready *regexp.Regexp, timeout time.Duration) (*Process, []string, error) {
	p, ms, err := startProcessN(name, bin, args, env, ready, 1, timeout)
	if err != nil {
		return nil, nil, err
	}
	return p, ms[0], nil
}

// StartProcessN is StartProcess waiting for n matching lines (smg-sim --instances n prints
// one per instance); it returns their submatches in order.
func StartProcessN(name, bin string, args, env []string, ready *regexp.Regexp, n int, timeout time.Duration) (*Process, [][]string, error) {
	return startProcessN(name, bin, args, env, ready, n, timeout)
}

func startProcessN(name, bin string, args, env []string, ready *regexp.Regexp, n int, timeout time.Duration) (*Process, [][]string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	p := &Process{Name: name, cmd: exec.Command(bin, args...), done: make(chan struct{}), tail: &tailBuffer{max: 4096}}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = procAttr()
	if err := p.cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	_ = w.Close() // the child holds the write end; r reads EOF when it exits
	found := make(chan [][]string, 1)
	go func() {
		var all [][]string
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = p.tail.Write(append(line, '\n'))
			if m := ready.FindSubmatch(line); m != nil {
				subs := make([]string, len(m))
				for i := range m {
					subs[i] = string(m[i])
				}
				if all = append(all, subs); len(all) == n {
					found <- all
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
	case m := <-found:
		return p, m, nil
	case <-p.done:
		return nil, nil, fmt.Errorf("%s exited before it was ready: %s", name, p.tail.String())
	case <-timer.C:
		p.Stop(time.Second)
		return nil, nil, fmt.Errorf("%s not ready within %s: %s", name, timeout, p.tail.String())
	}
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output is the end of the process's output (one line).
func (p *Process) Output() string { return p.tail.String() }

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs it; it returns
// once the process has exited. Safe to call more than once.
func (p *Process) Stop(grace time.Duration) {
	if p == nil || p.Exited() {
		return
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

// tailBuffer keeps the last max bytes written.
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
	s := strings.Join(strings.Fields(t.buf.String()), " ")
	if s == "" {
		return "(no output)"
	}
	return s
}
