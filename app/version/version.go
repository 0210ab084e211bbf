// Package version holds the build's version string, set at link time with
// -ldflags "-X github.com/smg-go/smg/app/version.Version=v1.2.3".
package version

// Version is the smg release, "dev" for an unstamped build.
var Version = "dev"
