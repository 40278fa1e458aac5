// Package statuspage serves Tabula's status pages over HTTP: the master's
// (cluster summary, servers, tables with their families and tablets,
// recent events, and per table a key-access heatmap) and each tablet
// server's own page (its tablets with size and load, its recent events).
//
// The pages are rendered on the server with html/template, the heatmap as
// inline SVG; everything they need is embedded in the binary (no build
// step, no external assets, no JavaScript). They read the master's state
// through its methods, and load through the leader's load reports: an
// OnLoadReport watcher reduces each report to one heatmap column per table
// (heatmap.go), keeping a bounded history. docs/OPERATIONS.md "Status
// page" says what each part shows and how to read the heatmap.
//
// The master does not import this package: the command that runs a
// master (cmd/tabula, devcluster users) mounts its routes on the
// operator's HTTP port (package opshttp).
package statuspage
