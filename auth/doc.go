// Package auth decides who may call what: it authenticates the caller of
// every gRPC call (a bearer token, or the common name of a verified TLS
// client certificate), and checks the caller's role on the table the call
// touches against grants kept in etcd.
//
// Tokens and grants live under the cluster's etcd prefix
// (docs/CONTRACTS.md §3, docs/OPERATIONS.md "Security"):
//
//	<prefix>auth/tokens/<id>                 {"principal":..,"sha256":..,"description":..,"created":..}
//	<prefix>auth/grants/<principal>/<table>  {"role":"read"|"write"|"admin"}; table "*" is every table and the cluster
//
// meta stores and reads these records (meta/auth.go: their keys, JSON and
// watch); auth decides what they mean.
//
// A token is "tabula_<id>_<secret>"; etcd holds only the SHA-256 of the
// secret, so reading etcd does not reveal a usable token. Every process
// that checks calls keeps the records in memory (Cache), kept current by
// an etcd watch, so a check costs a map lookup and a hash, and a revoked
// token or grant stops working as soon as the watch delivers the change
// (milliseconds on a healthy cluster).
//
// Roles are ordered: read < write < admin; a role on "*" applies to every
// table. The master-only calls of the tablet servers accept only a caller
// whose verified certificate names the master (MasterName), never a
// token, so no client credential can unload a tablet or change a schema.
//
// A caller whose verified certificate names the gateway identity
// (GatewayName) may run a call as another principal by sending its name
// under ActingForKey; the call then has that principal's roles only.
// From anyone else the assertion is refused (docs/OPERATIONS.md "The
// gateway identity").
//
// Guard is the gRPC side: interceptors that run the check before every
// handler, refuse with UNAUTHENTICATED or PERMISSION_DENIED, and write an
// audit log line for every administrative call.
package auth
