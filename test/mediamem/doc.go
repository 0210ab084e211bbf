// Package mediamem holds the gateway's memory-bound tests for media and tokenizer bundles:
// the built `smg` binary runs as a child process in front of in-process gRPC simulators
// (loopback only), and its peak resident set (VmHWM) is read from /proc.
package mediamem
