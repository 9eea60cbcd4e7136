//go:build race

package sandbox

// raceEnabled: the race detector maps terabytes of shadow memory as it
// goes, which no address-space limit leaves room for, so a race-enabled
// child relies on its heap watchdog alone.
const raceEnabled = true
