package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestOpenEvents: the stream is off unless THOUGHTBOX_EVENTS_ENABLED says
// on; on, it goes to the stderr given or to THOUGHTBOX_EVENTS_DEST; a
// destination that cannot be opened is an error naming the setting.
func TestOpenEvents(t *testing.T) {
	dir := t.TempDir()
	open := func(env map[string]string, stderr *bytes.Buffer) (*Config, error) {
		env[EnvDataDir], env[EnvStorage] = dir, "memory"
		c, err := Resolve(Flags{}, envOf(env))
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.OpenEvents(stderr)
		if s != nil {
			s.Publish(ledger.Event{Type: "session_started", SessionID: "s"})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		return c, err
	}
	for _, off := range []string{"", "0", "false", "OFF", "no"} {
		var stderr bytes.Buffer
		if _, err := open(map[string]string{EnvEventsEnabled: off}, &stderr); err != nil || stderr.Len() != 0 {
			t.Errorf("enabled=%q: %v, wrote %q; want no stream", off, err, stderr.String())
		}
	}
	var stderr bytes.Buffer
	if _, err := open(map[string]string{EnvEventsEnabled: "Yes", EnvEventsDest: "STDERR"}, &stderr); err != nil || !strings.Contains(stderr.String(), `"session_started"`) {
		t.Errorf("to stderr: %v, wrote %q", err, stderr.String())
	}
	path := filepath.Join(dir, "logs", "events.jsonl")
	if _, err := open(map[string]string{EnvEventsEnabled: "on", EnvEventsDest: path}, nil); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"session_started"`) {
		t.Errorf("to a file: %q, %v", data, err)
	}
	if _, err := open(map[string]string{EnvEventsEnabled: "1", EnvEventsDest: "/proc/nope/events.jsonl"}, nil); err == nil || !strings.Contains(err.Error(), EnvEventsDest) {
		t.Errorf("a destination that cannot be opened: %v, want an error naming %s", err, EnvEventsDest)
	}
}
