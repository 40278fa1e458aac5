package opshttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Probe asks the endpoint path ("/readyz" or "/healthz") of the process
// whose operator endpoints listen on addr, and returns nil on 200, else an
// error carrying the process's own reason. It is what `tabula health` runs,
// so that container images without curl can still be probed.
func Probe(ctx context.Context, addr, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("opshttp: %s%s: %s: %s", addr, path, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
