// Package mcptest holds what tests of Switchboard's MCP endpoint share.
package mcptest

import (
	"net/http"
	"strings"
)

// InitializeStatus is the HTTP status /mcp at base answers a bare
// initialize sent with token: 200 for a token it takes, 401 for one it
// refuses.
func InitializeStatus(base, token string) (int, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
