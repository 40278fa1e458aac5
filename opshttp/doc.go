// Package opshttp holds the operator's endpoints of a Tabula process: the
// HTTP endpoints an orchestrator or a person probes (/healthz, /readyz) and
// the standard gRPC health service, both answering from one readiness
// check so that the two can never disagree.
//
// It knows nothing of masters or tablet servers: each process hands it a
// Check that says, with an error, what is not ready. Processes add
// their other endpoints as Routes (/metrics from package metrics, status
// pages), which is why it is named for the operator's HTTP endpoints
// rather than for health alone.
package opshttp
