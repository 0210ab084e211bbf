// Package grpcfleet holds end-to-end tests of gRPC workers: an in-process gateway (via
// test/fleet) in front of gRPC simulators (test/sim/grpcsim) on loopback, started with the
// seed's gRPC `smg launch` examples.
package grpcfleet
