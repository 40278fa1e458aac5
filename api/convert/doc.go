// Package convert translates between Tabula's RPC messages (package
// tabulapb) and the Go vocabulary the engine and the client speak:
// cell.Mutation, cell.ReadModifyWriteRule, cell.Cell, rowfilter.Filter and
// families.Family. Both sides of the wire use it, so a message means the
// same thing to the client that builds it and the server that reads it.
//
// Conversions from proto check structure (a oneof left unset, a nil
// element, a filter nested too deep, a number out of range) and return
// errors wrapping cell.ErrInvalid that name the bad field; they do not
// check limits such as key length, which cell.ValidateMutations and
// families.Family.Validate own. Conversions to proto cannot fail.
//
//	muts, err := convert.MutationsFromProto(req.GetMutations())
//	if err != nil { return status.Error(codes.InvalidArgument, err.Error()) }
//	f, err := convert.FilterFromProto(req.GetFilter()) // nil filter: pass all
//	...
//	resp.Rows = append(resp.Rows, convert.CellsToProtoRow(row, cells))
package convert
