package store

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ParseRedisURL parses redis://[user:password@]host:port[/db] (rediss:// for TLS) into
// RedisOptions; several comma-separated hosts, or ?cluster=true, select Redis Cluster.
func ParseRedisURL(raw string) (RedisOptions, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return RedisOptions{}, errors.New("want redis://[user:password@]host:port[/db]")
	}
	opts := RedisOptions{Addrs: strings.Split(u.Host, ","), Cluster: u.Query().Get("cluster") == "true"}
	if u.User != nil {
		opts.Username = u.User.Username()
		opts.Password, _ = u.User.Password()
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		if opts.DB, err = strconv.Atoi(db); err != nil {
			return RedisOptions{}, fmt.Errorf("database %q is not a number", db)
		}
	}
	if u.Scheme == "rediss" {
		opts.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return opts, nil
}
