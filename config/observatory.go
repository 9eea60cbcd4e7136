package config

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Observatory defaults.
const (
	DefaultObservatoryPort           = 1729
	DefaultObservatoryMaxConnections = 100
	DefaultObservatoryAbandonAfter   = 24 * time.Hour
	DefaultObservatoryLiveWindow     = 5 * time.Minute
)

// ObservatorySettings are the Observatory's settings from the environment.
type ObservatorySettings struct {
	// Enabled starts the Observatory next to thoughtbox serve.
	Enabled bool
	Port    int
	// Origins are the extra browser origins allowed (the Observatory's
	// own and loopback ones always are); "*" allows all.
	Origins        []string
	MaxConnections int
	HTTPAPI        bool
	AbandonAfter   time.Duration
	// LiveWindow is how recently a session must have been written to for
	// the page to list it as live.
	LiveWindow time.Duration
}

// Observatory reads the THOUGHTBOX_OBSERVATORY_* settings. A value that
// cannot be used is a *SettingError naming the variable.
func (c *Config) Observatory() (ObservatorySettings, error) {
	s := ObservatorySettings{Port: DefaultObservatoryPort, MaxConnections: DefaultObservatoryMaxConnections, AbandonAfter: DefaultObservatoryAbandonAfter,
		LiveWindow: DefaultObservatoryLiveWindow}
	var err error
	if s.Enabled, err = c.flag(EnvObservatoryEnabled); err != nil {
		return s, err
	}
	if s.HTTPAPI, err = c.flag(EnvObservatoryHTTPAPI); err != nil {
		return s, err
	}
	if v := c.Getenv(EnvObservatoryPort); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 65535 {
			return s, &SettingError{Name: EnvObservatoryPort, Value: v, Reason: "expected a port number from 0 to 65535"}
		}
		s.Port = n
	}
	if v := c.Getenv(EnvObservatoryMaxConnections); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, &SettingError{Name: EnvObservatoryMaxConnections, Value: v, Reason: "expected a whole number of at least 1"}
		}
		s.MaxConnections = n
	}
	if v := c.Getenv(EnvObservatoryAbandonAfter); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, &SettingError{Name: EnvObservatoryAbandonAfter, Value: v, Reason: "expected a positive duration such as 24h or 90m"}
		}
		s.AbandonAfter = d
	}
	if v := c.Getenv(EnvObservatoryLiveWindow); v != "" {
		d, err := ParseLiveWindow(v)
		if err != nil {
			return s, &SettingError{Name: EnvObservatoryLiveWindow, Value: v, Reason: err.Error()}
		}
		s.LiveWindow = d
	}
	for _, o := range strings.Split(c.Getenv(EnvObservatoryCORS), ",") {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "" {
			continue
		}
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return s, &SettingError{Name: EnvObservatoryCORS, Value: o, Reason: "expected a comma-separated list of origins such as https://example.org:8443, or *"}
		}
		s.Origins = append(s.Origins, o)
	}
	return s, nil
}

func (c *Config) flag(name string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(c.Getenv(name))); v {
	case "", "0", "false", "no", "off":
		return false, nil
	case "1", "true", "yes", "on":
		return true, nil
	}
	return false, &SettingError{Name: name, Value: c.Getenv(name), Reason: "expected true or false"}
}

// ParseLiveWindow reads the Observatory's live window: a positive
// duration such as 5m or 90s.
func ParseLiveWindow(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return 0, errors.New("expected a positive duration such as 5m or 90s")
	}
	return d, nil
}
