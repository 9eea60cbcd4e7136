//go:build !race

package pack

const raceOn = false
