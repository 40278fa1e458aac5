package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/export"
)

// errUnreachable marks a master that could not be reached at all.
var errUnreachable = errors.New("cannot reach the master")

// explain turns an error into the message and hint printed on stderr.
func explain(err error) (msg, hint string) {
	if errors.Is(err, errUnreachable) {
		return err.Error(), "start a dev cluster with `tabula dev` (or `make run`), or point --master / TABULA_MASTER at a running master"
	}
	if errors.Is(err, export.ErrBadInput) {
		return err.Error(), "each line must be a row as `tabula export` writes it (or a cell line of an earlier release's export); fix the line and rerun: rows already written are written again unchanged"
	}
	if errors.Is(err, export.ErrNoTable) {
		return err.Error(), "rerun with --create, or create the table first with `tabula table create`"
	}
	if errors.Is(err, cell.ErrInvalid) {
		return err.Error(), "fix the argument named in the message; `tabula COMMAND --help` shows the expected forms"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return err.Error(), "the cluster did not answer in time; check it is running (`tabula servers`) or raise --timeout"
	}
	if errors.Is(err, context.Canceled) {
		return "interrupted", ""
	}
	st, ok := status.FromError(unwrapStatus(err))
	if !ok {
		return err.Error(), ""
	}
	prefix := errPrefix(err)
	msg = prefix + st.Message()
	switch st.Code() {
	case codes.NotFound:
		hint = "check the names: `tabula table list` lists tables, `tabula table describe TABLE` lists a table's families"
	case codes.AlreadyExists:
		hint = "pick another name, or delete the existing one first"
	case codes.InvalidArgument:
		hint = "fix the argument named in the message; `tabula COMMAND --help` shows the expected forms"
	case codes.FailedPrecondition:
		hint = "the cluster is moving tablets or a server is unavailable; retry in a few seconds"
		switch {
		case strings.Contains(st.Message(), "protected from deletion"): // the master's ErrProtected
			hint = "the table has deletion protection (`tabula table describe TABLE` shows it); lift it with `tabula table unprotect TABLE` if the delete is meant"
		case strings.Contains(st.Message(), "namespace not empty"): // meta.ErrNamespaceNotEmpty
			hint = "`tabula table list` shows the namespace's tables; delete them, or delete the namespace with them: `tabula namespace delete NAMESPACE --recursive`"
		case strings.Contains(st.Message(), "cannot be deleted"): // the default namespace
			hint = "the default namespace holds the tables named without a prefix and always exists"
		}
	case codes.ResourceExhausted:
		hint = "the server is overloaded (flushes are behind); retry later or write in smaller batches"
		if strings.HasPrefix(st.Message(), "quota: ") { // quota.Refusal
			hint = "a quota refused it (the message names it; `tabula quota list` lists them): retry after the delay, or ask an admin to raise it"
		}
	case codes.Unauthenticated:
		hint = "this cluster requires credentials: pass --token (or TABULA_TOKEN) from `tabula auth token create`, or --tls-cert/--tls-key; see docs/OPERATIONS.md \"Security\""
	case codes.PermissionDenied:
		hint = "your principal lacks the role named in the message (`tabula auth whoami` shows yours); ask an admin to grant it"
	case codes.Unavailable:
		hint = "is the cluster running? start one with `tabula dev`, or point --master / TABULA_MASTER at a running master; then retry"
		if tlsMismatch(st.Message()) {
			hint = "the server speaks TLS and this command did not (or the other way round): pass --tls-ca (TABULA_TLS_CA) with the cluster's CA certificate, or check the address"
		}
	case codes.DeadlineExceeded:
		hint = "the cluster did not answer in time; check it is running (`tabula servers`) or raise --timeout"
	case codes.Unimplemented:
		hint = "the server is a different version of tabula than this binary"
	case codes.Internal:
		hint = "the cluster found damaged data (the message names the file) or hit a bug; retrying will not help: see the server's log and docs/OPERATIONS.md"
	case codes.DataLoss:
		hint = "a tablet's files are missing from the storage root (deleted, or the servers point at another root); restore them: the master retries the tablet every 30 s; see docs/OPERATIONS.md"
	case codes.Unknown:
		hint = "the server failed in a way it could not classify; a write may or may not have been applied (read it back before retrying); the server's log has the cause"
	}
	if msg == "" {
		msg = st.Code().String()
	}
	return msg, hint
}

// unwrapStatus finds a gRPC status error inside a wrapped error chain.
func unwrapStatus(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(interface{ GRPCStatus() *status.Status }); ok {
			return e
		}
	}
	return err
}

// errPrefix returns the context our own code wrapped around a status error
// ("creating table t: "), so the message keeps it.
func errPrefix(err error) string {
	inner := unwrapStatus(err)
	if inner == err {
		return ""
	}
	full, tail := err.Error(), inner.Error()
	if i := strings.Index(full, tail); i > 0 {
		return full[:i]
	}
	return ""
}

// wrapf adds context to an error, keeping it inspectable with errors.Is.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// errNoFamily marks a family name the table does not have.
var errNoFamily = errors.New("no such family")

// tlsMismatch recognises the errors gRPC reports when a plaintext client
// meets a TLS server (the server hangs up before its preface) or a TLS
// client meets a plaintext one.
func tlsMismatch(msg string) bool {
	for _, m := range []string{"error reading server preface", "first record does not look like a TLS handshake", "tls: "} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}
