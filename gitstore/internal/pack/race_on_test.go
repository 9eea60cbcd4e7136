//go:build race

package pack

// raceOn: the race detector allocates on its own, so allocation bounds do
// not hold under it.
const raceOn = true
