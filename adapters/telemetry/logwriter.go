package telemetry

import (
	"io"
	"sync"
	"time"
)

// LogBufferSize is the LogWriter's buffer: 64 KiB, about 150 access lines.
const LogBufferSize = 64 << 10

// LogWriter batches the gateway's log records into fewer write(2) calls on its output
// (stderr): one write per record costs ~10-15 µs of CPU, a fifth of a proxied request's.
// Each Write is taken as one whole record (slog's handlers write a record in one call) and
// records reach the output whole and in order. Between Start and Close:
//   - a record that would not fit in the buffer first writes out what is buffered; a record
//     larger than the whole buffer is then written directly, in its own write;
//   - a background flusher writes out whatever is pending every interval;
//   - Flush writes out at once (NewLogger's handler calls it after every WARN or ERROR
//     record, so those are never held back).
//
// Before Start, after Close, and with interval 0 every record is written at once, as
// without a LogWriter. A write that must reach the output holds one mutex around the
// buffer and the write, so a slow output delays a logging request by at most one write, as
// a direct write would. Safe for concurrent use.
type LogWriter struct {
	interval time.Duration

	mu      sync.Mutex
	out     io.Writer
	buf     []byte
	direct  bool // not started, unbuffered (interval 0) or closed
	started bool
	stop    chan struct{}
	done    chan struct{}
}

// NewLogWriter returns a writer to out that, once started, buffers up to size bytes
// (LogBufferSize when size <= 0) and writes them out at least every interval while
// anything is pending. interval <= 0 gives a writer that never buffers.
func NewLogWriter(out io.Writer, size int, interval time.Duration) *LogWriter {
	if size <= 0 {
		size = LogBufferSize
	}
	w := &LogWriter{interval: interval, out: out, direct: true}
	if interval > 0 {
		w.buf = make([]byte, 0, size)
	}
	return w
}

// Start begins buffering and starts the flusher goroutine (the telemetry Module's OnStart);
// Close stops it. Start is a no-op with interval 0, when started already, or after Close.
func (w *LogWriter) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.interval <= 0 || w.started {
		return
	}
	w.started, w.direct = true, false
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go w.flushEvery(w.interval, w.stop, w.done)
}

// Write buffers p, one whole record, or writes it out as described on LogWriter. It
// returns len(p) once p is buffered; an output error is returned by the Write, Flush or
// Close that met it.
func (w *LogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.direct {
		return w.out.Write(p)
	}
	if len(w.buf)+len(p) > cap(w.buf) {
		if err := w.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > cap(w.buf) {
			return w.out.Write(p)
		}
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Flush writes out what is buffered.
func (w *LogWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

// Close stops the flusher, waits for it to end and writes out the rest (the telemetry
// Module's OnStop, and the command line's last word before it exits); records written
// after it go straight to the output. Closing twice is a no-op. It never closes the
// output.
func (w *LogWriter) Close() error {
	w.mu.Lock()
	stop, done := w.stop, w.done
	w.stop = nil
	err := w.flushLocked()
	w.direct = true
	w.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return err
}

// flushLocked writes the buffer out in one write. On an error the buffered records are
// dropped (a broken stderr must not grow the buffer) and the error is returned.
func (w *LogWriter) flushLocked() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.out.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

func (w *LogWriter) flushEvery(interval time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_ = w.Flush()
		}
	}
}
