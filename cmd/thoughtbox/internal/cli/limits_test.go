package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
)

// TestReadLimits checks the defaults and that a bad value names its
// variable.
func TestReadLimits(t *testing.T) {
	env := map[string]string{}
	cfgWith := func() *config.Config {
		cfg, err := config.Resolve(config.Flags{DataDir: t.TempDir()}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	l, err := readLimits(cfgWith())
	if err != nil || l.readTimeout != 30*time.Second || l.maxConns != 512 || l.rootsTimeout != 10*time.Second || l.maxProjects != 16 {
		t.Fatalf("defaults: %+v, %v", l, err)
	}
	env[config.EnvHTTPMaxConns], env[config.EnvAllowedOrigins] = "64", "https://a.example, http://b.example:8080"
	if l, err = readLimits(cfgWith()); err != nil || l.maxConns != 64 || len(l.origins) != 2 {
		t.Errorf("set: %+v, %v", l, err)
	}
	for k, v := range map[string]string{config.EnvHTTPReadTimeout: "soon", config.EnvHTTPMaxConns: "0", config.EnvAllowedOrigins: "https://a.example/path", config.EnvRootsTimeout: "-1s"} {
		env = map[string]string{k: v}
		if _, err := readLimits(cfgWith()); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
