// Package archtest holds the architecture test: it reads the module's
// import graph with `go list -deps -json` and fails on any arrow that
// doc/architecture.md forbids, naming the chain of imports that breaks it.
// The package has no code of its own; Check and the rules live in its
// test files.
package archtest
