package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// maxKeyFileBytes bounds what --admin-api-key-file may hold (a key, not a document).
const maxKeyFileBytes = 4 << 10

// LoadSecrets reads the files of the *-file secret flags into the config: the admin API key
// from --admin-api-key-file (surrounding whitespace, such as a trailing newline, removed).
// Errors are *FlagError naming the flag, never quoting the file's contents. `smg launch`
// calls it before Validate.
func (c *Config) LoadSecrets() error {
	if c.AdminAPIKeyFile == "" {
		return nil
	}
	if c.AdminAPIKey != "" {
		return bad("--admin-api-key-file", "cannot be combined with --admin-api-key (or SMG_ADMIN_API_KEY): give the key one way")
	}
	fi, err := os.Stat(c.AdminAPIKeyFile)
	if err != nil {
		return bad("--admin-api-key-file", "cannot read %s: %v", c.AdminAPIKeyFile, errors.Unwrap(err))
	}
	if fi.Size() > maxKeyFileBytes {
		return bad("--admin-api-key-file", "%s holds %d bytes; a key file holds at most %d", c.AdminAPIKeyFile, fi.Size(), maxKeyFileBytes)
	}
	b, err := os.ReadFile(c.AdminAPIKeyFile)
	if err != nil {
		return bad("--admin-api-key-file", "cannot read %s: %v", c.AdminAPIKeyFile, errors.Unwrap(err))
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return bad("--admin-api-key-file", "%s is empty", c.AdminAPIKeyFile)
	}
	c.AdminAPIKey = key
	return nil
}

// validateEdge checks the flags that bound what clients and registrations may do: the body
// read deadline and in-flight budget, the API keys, the worker allow-list, the worker cap, the probe
// concurrency and the request-id headers.
func (c Config) validateEdge() error {
	if c.BodyReadTimeout <= 0 {
		return bad("--body-read-timeout-secs", "must be more than 0 seconds (got %s)", secs(c.BodyReadTimeout))
	}
	if c.MaxInflightBodyMB < 0 {
		return bad("--max-inflight-body-mb", "must be 0 (unbounded) or more MiB (got %d)", c.MaxInflightBodyMB)
	}
	for _, k := range []struct{ flag, key string }{{"--admin-api-key", c.AdminAPIKey}, {"--api-key", c.APIKey}} {
		if k.key != "" && (strings.TrimSpace(k.key) != k.key || strings.ContainsAny(k.key, " \t\r\n")) {
			return bad(k.flag, "must not contain spaces or control characters (it is sent as `Authorization: Bearer <key>`)")
		}
	}
	if h := c.TenantHeader; h != "" && (strings.TrimSpace(h) != h || strings.ContainsAny(h, " \t:") ||
		strings.EqualFold(h, "Authorization")) {
		return bad("--tenant-header", "%q is not a header name the gateway can trust for tenants", h)
	}
	for _, h := range c.WorkerAllowedHosts {
		if err := checkHostPattern(h); err != nil {
			return bad("--worker-allowed-hosts", "%s", err)
		}
	}
	if c.MaxWorkers < 0 {
		return bad("--max-workers", "must be 0 (no cap) or more (got %d)", c.MaxWorkers)
	}
	if c.RegistrationProbes < 1 {
		return bad("--registration-probe-concurrency", "must be 1 or more (got %d)", c.RegistrationProbes)
	}
	if len(c.RequestIDHeaders) == 0 {
		return bad("--request-id-headers", "needs at least one header name")
	}
	for _, h := range c.RequestIDHeaders {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, " \t:") {
			return bad("--request-id-headers", "%q is not a header name", h)
		}
	}
	return nil
}

// checkHostPattern accepts a host name, an IP address or a CIDR (10.0.0.0/8, fd00::/8).
func checkHostPattern(h string) error {
	if strings.TrimSpace(h) == "" {
		return errors.New("empty entry (expected a host name, an IP address or a CIDR)")
	}
	if strings.Contains(h, "/") {
		if _, _, err := net.ParseCIDR(h); err != nil {
			return fmt.Errorf("%q is not a CIDR (e.g. 10.0.0.0/8)", h)
		}
		return nil
	}
	if strings.ContainsAny(h, " \t:@") && net.ParseIP(h) == nil {
		return fmt.Errorf("%q is not a host name, IP address or CIDR", h)
	}
	return nil
}

// redisDB checks the database number of a Redis URL the way go-redis's ParseURL reads it
// (options.go setupTCPConn and setupConnParams, v9): one path segment for redis:// and
// rediss:// ("/3"), the db query parameter for every scheme; a number from 0 up.
func redisDB(u *url.URL) error {
	check := func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("database number %q is not a whole number from 0 up", v)
		}
		return nil
	}
	if u.Scheme != "unix" {
		f := strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' })
		switch len(f) {
		case 0:
		case 1:
			if err := check(f[0]); err != nil {
				return err
			}
		default:
			return fmt.Errorf("path %q must be /<database number>", u.Path)
		}
	}
	if db := u.Query().Get("db"); db != "" {
		return check(db)
	}
	return nil
}

// redactURL is u with its password hidden, for error messages.
// redisAuthority cuts "scheme://[userinfo@]hosts[/path][?query]" into the scheme, the
// hosts and what follows them, without url.Parse (which refuses a comma list of seeds).
func redisAuthority(raw string) (scheme, hosts, tail string, ok bool) {
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
	return raw[:i], auth[strings.LastIndex(auth, "@")+1:], rest[end:], true
}

// isRedisClusterURL: several seeds (a comma list or addr parameters) mean a Redis Cluster,
// as redis.IsClusterURL decides.
func isRedisClusterURL(raw string) bool {
	_, hosts, tail, ok := redisAuthority(raw)
	return ok && (strings.Contains(hosts, ",") || strings.Contains(tail, "addr="))
}

// redisClusterURL checks a Redis Cluster URL the way redis.ParseClusterURL reads it:
// redis:// or rediss://, no empty seed in the comma list, database 0 only. The errors name
// the seeds, never the credentials.
func redisClusterURL(raw string) error {
	scheme, hosts, tail, ok := redisAuthority(raw)
	if !ok || (scheme != "redis" && scheme != "rediss") {
		return fmt.Errorf("a Redis Cluster URL must be redis://[user:pass@]host:port[,host:port...] or rediss://")
	}
	for _, s := range strings.Split(hosts, ",") {
		if s == "" {
			return fmt.Errorf("empty seed address in %q", hosts)
		}
	}
	u, err := url.Parse("redis://seed" + tail)
	if err != nil {
		return fmt.Errorf("a Redis Cluster URL must be redis://host:port[,host:port...] (it does not parse after the seeds %q)", hosts)
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		return fmt.Errorf("a Redis Cluster has only database 0 (path %q, seeds %q)", u.Path, hosts)
	}
	if db := u.Query().Get("db"); db != "" && db != "0" {
		return fmt.Errorf("a Redis Cluster has only database 0 (db=%s, seeds %q)", db, hosts)
	}
	return nil
}

func redactURL(u *url.URL) string { return u.Redacted() }
