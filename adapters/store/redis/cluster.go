package redis

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// IsClusterURL reports whether raw names several Redis seed nodes, as a comma list in the
// host part ("redis://h1:p1,h2:p2") or as go-redis's addr query parameters
// ("redis://h1:p1?addr=h2:p2"): such a URL can only mean a Redis Cluster.
func IsClusterURL(raw string) bool {
	_, hosts, query, ok := splitAuthority(raw)
	if !ok {
		return false
	}
	q, _ := url.ParseQuery(query)
	return strings.Contains(hosts, ",") || q.Has("addr")
}

// splitAuthority cuts "scheme://[userinfo@]hosts[/path][?query]" into the part before the
// hosts, the hosts and the query, without url.Parse, which refuses a comma list of
// host:port pairs.
func splitAuthority(raw string) (head, hosts, query string, ok bool) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return "", "", "", false
	}
	rest := raw[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	if _, q, found := strings.Cut(rest[end:], "?"); found {
		query = q
	}
	at := strings.LastIndex(auth, "@")
	return raw[:i+3] + auth[:at+1], auth[at+1:], query, true
}

// ParseClusterURL parses a Redis Cluster URL: go-redis's ParseClusterURL form
// "redis[s]://[user:pass@]host:port[?addr=host:port&...]", where the host part may also be a
// comma list of seeds ("redis://h1:7001,h2:7002"). A seed without a port takes 6379.
// Errors: another scheme, an empty seed, a database other than 0 (path or db parameter),
// and what go-redis rejects (unknown query parameters among them).
func ParseClusterURL(raw string) (*goredis.ClusterOptions, error) {
	head, hosts, _, ok := splitAuthority(raw)
	if !ok {
		return nil, fmt.Errorf("redis cluster url: %q has no scheme://", raw)
	}
	seeds := strings.Split(hosts, ",")
	for i, s := range seeds {
		if s == "" {
			return nil, fmt.Errorf("redis cluster url: empty seed address in %q", hosts)
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			seeds[i] = net.JoinHostPort(strings.Trim(s, "[]"), "6379")
		}
	}
	u, err := url.Parse(head + seeds[0] + raw[len(head)+len(hosts):])
	if err != nil {
		return nil, fmt.Errorf("redis cluster url: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("redis cluster url: scheme must be redis or rediss (got %q)", u.Scheme)
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		return nil, fmt.Errorf("redis cluster url: a cluster has only database 0 (path %q)", u.Path)
	}
	q := u.Query()
	if db := q.Get("db"); db != "" && db != "0" {
		return nil, fmt.Errorf("redis cluster url: a cluster has only database 0 (db=%s)", db)
	}
	q.Del("db")
	for _, s := range seeds[1:] {
		q.Add("addr", s)
	}
	u.Path = ""
	u.RawQuery = q.Encode()
	o, err := goredis.ParseClusterURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("redis cluster url: %w", err)
	}
	return o, nil
}
