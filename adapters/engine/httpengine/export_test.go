package httpengine

// Pools is the number of worker URLs the client keeps a connection pool for.
func Pools(c *Client) int {
	n := 0
	c.pools.Range(func(_, _ any) bool { n++; return true })
	return n
}
