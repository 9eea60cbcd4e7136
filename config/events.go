package config

import (
	"fmt"
	"io"
	"strings"

	"github.com/thoughtbox/thoughtbox/events"
)

// checkEvents checks the event stream's settings without opening
// anything, so that a bad value is refused before anything is written.
func checkEvents(getenv func(string) string) error {
	v := getenv(EnvEventsEnabled)
	on, err := eventsEnabled(v)
	if err != nil {
		return &SettingError{Name: EnvEventsEnabled, Value: v, Reason: err.Error()}
	}
	if dest := strings.TrimSpace(getenv(EnvEventsDest)); on && strings.EqualFold(dest, "stdout") {
		return &SettingError{Name: EnvEventsDest, Value: dest, Reason: "stdout carries the MCP protocol under stdio and data in the CLI; use stderr or a file path"}
	}
	return nil
}

func eventsEnabled(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return false, nil
	case "1", "true", "yes", "on":
		return true, nil
	}
	return false, fmt.Errorf("expected 1, true, yes or on (or 0, false, no, off)")
}

// OpenEvents opens the JSONL event stream the settings ask for: nil when
// THOUGHTBOX_EVENTS_ENABLED is unset or false, else a sink writing to
// THOUGHTBOX_EVENTS_DEST (stderr, the one given, by default). Errors name
// the setting at fault.
func (c *Config) OpenEvents(stderr io.Writer) (*events.JSONL, error) {
	if err := checkEvents(c.Getenv); err != nil {
		return nil, err
	}
	if on, _ := eventsEnabled(c.Getenv(EnvEventsEnabled)); !on {
		return nil, nil
	}
	dest := strings.TrimSpace(c.Getenv(EnvEventsDest))
	s, err := events.Open(dest, stderr)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", EnvEventsDest, dest, err)
	}
	return s, nil
}
