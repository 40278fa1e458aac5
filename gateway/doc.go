// Package gateway serves the Cloud Bigtable API — google.bigtable.v2.Bigtable
// (data), google.bigtable.admin.v2.BigtableTableAdmin (tables, families
// and backups, which are Tabula snapshots: backups.go), google.longrunning
// Operations for the operations it returned, and the part of BigtableInstanceAdmin that tools use to list instances and
// clusters — on top of Tabula's Go client (docs/GATEWAY.md). Point the
// official Bigtable clients, cbt or the HBase adapter at it with
// BIGTABLE_EMULATOR_HOST and they run unchanged against a persistent,
// distributed store.
//
// The gateway is stateless but for the operations it returned, kept in
// memory for GetOperation (operations.go): it maps each request to client
// calls and their answers back to the Bigtable protos, so any number of
// gateways can serve one cluster. Every project maps to the one Tabula cluster the gateway's
// client talks to; an instance is a Tabula namespace, and an instance that
// is none is the default namespace or NOT_FOUND (Options.Instances,
// namespaces.go); the table id in a resource name is the Tabula table name
// in the instance's namespace. With Options.CallerAuth each call runs as
// its caller, identified by its token or, over TLS (Options.TLS), its
// client certificate (callers.go).
//
// What the API needs from the engine (reversed scans, labels and sinks in
// filters, nested GC rules, aggregate families, fast row-range drops) lives
// in the engine, not here; this package only translates. Operations Tabula
// does not have (CopyBackup, hot backups, Bigtable's table snapshots,
// authorized views, change streams, SQL)
// answer UNIMPLEMENTED naming the operation.
package gateway
