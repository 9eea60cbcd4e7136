// Package archtest holds the architecture test: it reads the module's
// import graph with `go list -deps -json` and fails on any arrow that
// doc/architecture.md forbids, naming the chain of imports that breaks it.
// It also holds the test that every section of the benchmarks page cited
// in the module's code and documents exists there, the test that every
// THOUGHTBOX_ setting the product reads is in the README's settings
// table, and the one that keeps the product packages' functions and files
// short (TestSizes). The package has no code of its own; Check and the
// rules live in its test files.
package archtest
