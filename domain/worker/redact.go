package worker

import (
	"net/url"
	"strings"
)

// RedactURL is raw with any userinfo (http://user:password@host) replaced by "redacted", for
// every place a worker URL is shown: the API, metric labels, logs and error messages. The
// registered URL keeps its credentials for dialing. A URL without userinfo is returned as it
// is without parsing (the common case costs one scan), so it is cheap on request paths. A
// URL that does not parse loses everything up to the last '@' of its authority.
func RedactURL(raw string) string {
	if base := stripDPSuffix(raw); len(base) < len(raw) { // keep a --dp-aware "@<rank>"
		return redactBase(base) + raw[len(base):]
	}
	return redactBase(raw)
}

func redactBase(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return raw
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		u.User = url.User("redacted")
		return u.String()
	}
	return scheme + "://redacted@" + rest[at+1:]
}

// DisplayURL is w.URL with credentials redacted (RedactURL): the form to show or log.
func (w Worker) DisplayURL() string { return RedactURL(w.URL) }
