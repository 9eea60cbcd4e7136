package cli

import (
	"strconv"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gateway"
)

// serverLimits are the server's bounds on what one client may hold; each
// has an environment variable (see the README's Security section).
type serverLimits struct {
	readTimeout  time.Duration // one request body
	idle         time.Duration // an idle keep-alive connection
	maxConns     int           // open HTTP connections
	maxSessions  int           // open MCP sessions over HTTP
	rootsTimeout time.Duration // a client's answer to roots/list
	maxProjects  int           // other projects kept open at once
	projectIdle  time.Duration // an unused project is closed after this
	origins      []string
}

func readLimits(cfg *config.Config) (serverLimits, error) {
	l := serverLimits{readTimeout: 30 * time.Second, idle: 2 * time.Minute, maxConns: 512, maxSessions: gateway.DefaultHTTPMaxSessions,
		rootsTimeout: 10 * time.Second, maxProjects: 16, projectIdle: 10 * time.Minute}
	for _, d := range []struct {
		env string
		v   *time.Duration
	}{{config.EnvHTTPReadTimeout, &l.readTimeout}, {config.EnvHTTPIdleTimeout, &l.idle}, {config.EnvRootsTimeout, &l.rootsTimeout}, {config.EnvProjectIdle, &l.projectIdle}} {
		text := strings.TrimSpace(cfg.Getenv(d.env))
		if text == "" {
			continue
		}
		v, err := time.ParseDuration(text)
		if err != nil || v <= 0 {
			return l, &config.SettingError{Name: d.env, Value: text, Reason: "expected a positive Go duration such as 30s or 5m"}
		}
		*d.v = v
	}
	for _, n := range []struct {
		env string
		v   *int
	}{{config.EnvHTTPMaxConns, &l.maxConns}, {config.EnvHTTPMaxSessions, &l.maxSessions}, {config.EnvMaxOpenProjects, &l.maxProjects}} {
		text := strings.TrimSpace(cfg.Getenv(n.env))
		if text == "" {
			continue
		}
		v, err := strconv.Atoi(text)
		if err != nil || v < 1 {
			return l, &config.SettingError{Name: n.env, Value: text, Reason: "expected a whole number of at least 1"}
		}
		*n.v = v
	}
	for _, o := range strings.Split(cfg.Getenv(config.EnvAllowedOrigins), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") || strings.Count(o, "/") > 2 {
			return l, &config.SettingError{Name: config.EnvAllowedOrigins, Value: o, Reason: "expected origins like https://app.example.com:8443, comma-separated, without a path"}
		}
		l.origins = append(l.origins, o)
	}
	return l, nil
}
