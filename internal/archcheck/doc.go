// Package archcheck holds no code: its test checks that the package table
// of ARCHITECTURE.md states the import graph among splitguard's own
// packages exactly, so that the document cannot drift from the code.
package archcheck
