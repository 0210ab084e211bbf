package telemetry_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/smg-go/smg/adapters/telemetry"
)

// recorder is an output that keeps each write apart.
type recorder struct {
	mu     sync.Mutex
	writes [][]byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(bytes.Join(r.writes, nil))
}

// waitFor polls cond for up to 2 s (a hang guard, not a timing assertion).
func waitFor(cond func() bool) bool {
	for range 200 {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// Under concurrent writers every line arrives whole, each writer's lines in its order, and
// no write ever starts or ends inside a line.
func TestLogWriterKeepsLinesWholeAndInOrder(t *testing.T) {
	t.Parallel()
	out := &recorder{}
	w := telemetry.NewLogWriter(out, 1024, time.Millisecond)
	w.Start()
	const writers, lines = 8, 300
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				pad := strings.Repeat("x", (g*37+i*11)%200)
				_, err := fmt.Fprintf(w, "w%d %05d %s\n", g, i, pad)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, w.Close())

	for _, p := range out.writes {
		require.True(t, bytes.HasSuffix(p, []byte("\n")), "a write ends inside a line: %q", p)
	}
	next := make([]int, writers)
	sc := bufio.NewScanner(strings.NewReader(out.all()))
	n := 0
	for sc.Scan() {
		var g, i int
		_, err := fmt.Sscanf(sc.Text(), "w%d %d", &g, &i)
		require.NoError(t, err, "line %q", sc.Text())
		require.True(t, g >= 0 && g < writers, "line %q", sc.Text())
		require.Equal(t, next[g], i, "writer %d out of order", g)
		assert.Equal(t, fmt.Sprintf("w%d %05d %s", g, i, strings.Repeat("x", (g*37+i*11)%200)), sc.Text())
		next[g]++
		n++
	}
	assert.Equal(t, writers*lines, n)
	assert.Less(t, out.count(), writers*lines, "records were batched")
}

// A record that does not fit first writes out what is buffered; one larger than the whole
// buffer is written on its own, after the lines before it.
func TestLogWriterFullBuffer(t *testing.T) {
	t.Parallel()
	out := &recorder{}
	w := telemetry.NewLogWriter(out, 64, time.Hour)
	w.Start()
	defer w.Close()
	a, b := strings.Repeat("a", 39)+"\n", strings.Repeat("b", 39)+"\n"
	_, _ = io.WriteString(w, a)
	assert.Equal(t, 0, out.count(), "a buffered record is held")
	_, _ = io.WriteString(w, b)
	require.Equal(t, 1, out.count(), "the second record did not fit")
	assert.Equal(t, a, string(out.writes[0]))
	big := strings.Repeat("c", 100) + "\n"
	n, err := io.WriteString(w, big)
	require.NoError(t, err)
	assert.Equal(t, len(big), n)
	require.Equal(t, 3, out.count())
	assert.Equal(t, b, string(out.writes[1]))
	assert.Equal(t, big, string(out.writes[2]))
}

// The flusher writes a pending record out without any further write.
func TestLogWriterFlushesOnTheInterval(t *testing.T) {
	t.Parallel()
	out := &recorder{}
	w := telemetry.NewLogWriter(out, 0, 20*time.Millisecond)
	w.Start()
	defer w.Close()
	_, _ = io.WriteString(w, "one\n")
	require.True(t, waitFor(func() bool { return out.count() == 1 }), "not flushed within 2 s")
	assert.Equal(t, "one\n", out.all())
}

// Close writes out the rest and stops the flusher; later records go straight out;
// closing twice is fine.
func TestLogWriterClose(t *testing.T) {
	t.Parallel()
	out := &recorder{}
	w := telemetry.NewLogWriter(out, 0, time.Hour)
	w.Start()
	_, _ = io.WriteString(w, "one\n")
	_, _ = io.WriteString(w, "two\n")
	assert.Equal(t, 0, out.count())
	require.NoError(t, w.Close())
	assert.Equal(t, "one\ntwo\n", out.all())
	_, _ = io.WriteString(w, "after\n")
	assert.Equal(t, "one\ntwo\nafter\n", out.all())
	require.NoError(t, w.Close())
	w.Start() // no restart after Close
	_, _ = io.WriteString(w, "later\n")
	assert.Equal(t, 3, out.count(), "written at once")
}

// Start runs a flusher goroutine; Close ends it (not parallel: goleak sees the whole
// process).
func TestLogWriterCloseStopsTheFlusher(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ws := make([]*telemetry.LogWriter, 3)
	for i := range ws {
		ws[i] = telemetry.NewLogWriter(io.Discard, 0, time.Hour)
		ws[i].Start()
		ws[i].Start() // one flusher each
		ws[i].Start()
	}
	require.Error(t, goleak.Find(before), "the flushers run")
	for _, w := range ws {
		require.NoError(t, w.Close())
	}
	goleak.VerifyNone(t, before)
}

// Interval 0, and any writer before Start, writes every record at once.
func TestLogWriterUnbuffered(t *testing.T) {
	t.Parallel()
	for _, interval := range []time.Duration{0, time.Hour} {
		out := &recorder{}
		w := telemetry.NewLogWriter(out, 0, interval)
		if interval == 0 {
			w.Start()
		}
		_, _ = io.WriteString(w, "one\n")
		_, _ = io.WriteString(w, "two\n")
		assert.Equal(t, []string{"one\n", "two\n"}, []string{string(out.writes[0]), string(out.writes[1])}, "interval %v", interval)
		require.NoError(t, w.Close())
	}
}

// Through the gateway logger, an INFO record waits for the flush; a WARN record is written
// at once and brings the INFO before it; an ERROR too.
func TestWarnFlushesAtOnce(t *testing.T) {
	t.Parallel()
	out := &recorder{}
	w := telemetry.NewLogWriter(out, 0, time.Hour)
	w.Start()
	defer w.Close()
	log := telemetry.NewLogger(telemetry.LogOptions{Level: "info", JSON: true}, w).With("k", "v")
	log.Info("first")
	assert.Equal(t, 0, out.count())
	log.WithGroup("g").Warn("careful", "n", 1)
	require.Equal(t, 1, out.count())
	lines := strings.Split(strings.TrimSpace(out.all()), "\n")
	require.Len(t, lines, 2)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
	assert.Equal(t, "careful", rec["msg"])
	assert.Equal(t, "v", rec["k"])
	log.Error("broken")
	assert.Equal(t, 2, out.count())
}

// BenchmarkBufferedWriter compares one 300-byte access line per Write on a real pipe (a
// goroutine drains the other end, as a log collector would): written directly, or through
// a LogWriter. writes/op counts the write(2) calls on the pipe per record; cpu-ns/op is the
// process's user+system CPU per record, the drain included.
func BenchmarkBufferedWriter(b *testing.B) {
	line := []byte(strings.Repeat("x", 299) + "\n")
	for _, mode := range []string{"direct", "buffered"} {
		b.Run(mode, func(b *testing.B) {
			pipe := drainedPipe(b)
			var w io.Writer = pipe
			if mode == "buffered" {
				lw := telemetry.NewLogWriter(pipe, telemetry.LogBufferSize, 100*time.Millisecond)
				lw.Start()
				defer lw.Close()
				w = lw
			}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			cpu := cpuTime(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = w.Write(line)
				}
			})
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(pipe.writes.Load())/float64(b.N), "writes/op")
		})
	}
}

// BenchmarkLoggerOutput is one access-line-sized INFO record through the gateway logger
// onto a drained pipe, unbuffered (--log-flush-interval-ms 0) or buffered (the default).
func BenchmarkLoggerOutput(b *testing.B) {
	for _, interval := range []time.Duration{0, 100 * time.Millisecond} {
		b.Run(fmt.Sprintf("interval=%v", interval), func(b *testing.B) {
			pipe := drainedPipe(b)
			lw := telemetry.NewLogWriter(pipe, telemetry.LogBufferSize, interval)
			lw.Start()
			defer lw.Close()
			log := telemetry.NewLogger(telemetry.LogOptions{Level: "info", JSON: true}, lw)
			b.ReportAllocs()
			cpu := cpuTime(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					log.LogAttrs(context.Background(), slog.LevelInfo, "request",
						slog.String("method", "POST"), slog.String("route", "/v1/chat/completions"),
						slog.Int("status", 200), slog.String("outcome", "ok"), slog.Float64("duration_ms", 12.5),
						slog.String("request_id", "chatcmpl-abcdefghijklmnopqrstuvwx"), slog.String("model", "m"))
				}
			})
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(pipe.writes.Load())/float64(b.N), "writes/op")
		})
	}
}

// countedPipe is the write end of an os.Pipe whose read end a goroutine drains; it counts
// the writes that reach the pipe.
type countedPipe struct {
	*os.File
	writes atomic.Int64
}

func (p *countedPipe) Write(b []byte) (int, error) {
	p.writes.Add(1)
	return p.File.Write(b)
}

func drainedPipe(b *testing.B) *countedPipe {
	r, w, err := os.Pipe()
	require.NoError(b, err)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, r)
	}()
	p := &countedPipe{File: w}
	b.Cleanup(func() { // after the benchmark's deferred LogWriter.Close
		w.Close()
		<-drained
		r.Close()
	})
	return p
}

// cpuTime is the process's user+system CPU time so far, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano() + ru.Stime.Nano()
}
