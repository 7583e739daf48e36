package store

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ParseRedisURL parses the --redis URL into RedisOptions:
//
//   - redis://[user:password@]host:port[/db] (rediss:// for TLS): one node;
//   - redis://[user:password@]host:port,host:port,…: Redis Cluster (several
//     seed nodes), or one seed with ?cluster=true;
//   - redis+sentinel://[user:password@]host:port[,host:port…]/master[/db]
//     (rediss+sentinel:// for TLS): Redis Sentinel. The hosts are sentinels,
//     master is the name they monitor; user and password are the master's,
//     ?sentinel_username= and ?sentinel_password= the sentinels' own (when
//     they have requirepass set).
func ParseRedisURL(raw string) (RedisOptions, error) {
	const want = "want redis://[user:password@]host:port[/db], redis://host:port,host:port (cluster) or redis+sentinel://host:port[,host:port]/master[/db]"
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return RedisOptions{}, errors.New(want)
	}
	sentinel := false
	switch u.Scheme {
	case "redis", "rediss":
	case "redis+sentinel", "rediss+sentinel":
		sentinel = true
	default:
		return RedisOptions{}, errors.New(want)
	}
	q := u.Query()
	opts := RedisOptions{Addrs: strings.Split(u.Host, ","), Cluster: q.Get("cluster") == "true"}
	if u.User != nil {
		opts.Username = u.User.Username()
		opts.Password, _ = u.User.Password()
	}
	path := strings.Trim(u.Path, "/")
	if sentinel {
		if opts.Cluster {
			return RedisOptions{}, errors.New("redis+sentinel:// cannot be a cluster (?cluster=true)")
		}
		name, db, _ := strings.Cut(path, "/")
		if name == "" {
			return RedisOptions{}, fmt.Errorf("redis+sentinel:// needs the master's name: redis+sentinel://host:port/master[/db]")
		}
		opts.MasterName, path = name, db
		opts.SentinelUsername, opts.SentinelPassword = q.Get("sentinel_username"), q.Get("sentinel_password")
	}
	if path != "" {
		if opts.DB, err = strconv.Atoi(path); err != nil {
			return RedisOptions{}, fmt.Errorf("database %q is not a number", path)
		}
	}
	if opts.DB != 0 && (opts.Cluster || len(opts.Addrs) > 1) && !sentinel {
		return RedisOptions{}, fmt.Errorf("database %d: Redis Cluster has only database 0", opts.DB)
	}
	if strings.HasPrefix(u.Scheme, "rediss") {
		opts.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return opts, nil
}
