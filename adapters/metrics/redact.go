package metrics

import "github.com/smg-go/smg/domain/worker"

// label is the worker label value of workerURL: the URL with any userinfo redacted
// (worker.RedactURL), so credentials in a registered URL never reach /metrics. Every
// per-worker series goes through it, set and delete alike.
func label(workerURL string) string { return worker.RedactURL(workerURL) }
