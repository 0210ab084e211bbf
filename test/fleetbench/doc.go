// Package fleetbench is the fleet benchmark behind `smg-bench fleet`: it starts N prefill and
// M decode smg-sim processes with a KV-cache model and 1..R smg gateway replicas (sharing a
// redis-server it starts when R > 1), drives open-loop Poisson traffic of streaming chat
// completions from production-like workloads (shared system prompts, multi-turn sessions,
// agentic long contexts, unique prompts, a short/long mix) and reports, per routing policy ×
// replica count × workload: TTFT and end-to-end percentiles, throughput, the prefill
// cache-hit rate from the simulators' own /sim/stats accounting, load imbalance, errors and
// recomputes; as a table, JSON and an SVG plot of the TTFT CDFs. Everything binds 127.0.0.1;
// every cell is bounded in requests and time. See docs/fleet-bench.md.
package fleetbench
