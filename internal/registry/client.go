// Package registry is Switchboard's side of the MCP Registry: a client of
// its API v0.1 (the official registry's, or a private one that speaks it)
// through the registry's own Go types, the copy of each registry kept in
// the store and refreshed in the background, search over that copy, and
// the mapping of a server.json package or remote to a launch.
//
// Everything a registry sends is hostile input: answers are read up to a
// bound, entries that do not decode or break the schema's limits are
// left out (counted), and nothing a registry names (an icon, a
// repository, a website) is ever fetched.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
)

// Official is the official MCP Registry.
const Official = "https://registry.modelcontextprotocol.io"

// maxAnswer bounds one answer of a registry (a page of 100 servers is
// well under it).
const maxAnswer = 8 << 20

// Client calls one registry's API v0.1.
type Client struct {
	// Base is the registry's URL, without /v0.1.
	Base string
	HTTP *http.Client
}

// NewClient is a client of the registry at base with a bounded HTTP
// client of its own.
func NewClient(base string) *Client {
	return &Client{Base: strings.TrimRight(base, "/"), HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// ListParams are GET /v0.1/servers' parameters.
type ListParams struct {
	Search       string
	Cursor       string
	Limit        int
	Latest       bool      // version=latest
	UpdatedSince time.Time // updated_since
}

// List reads one page of servers.
func (c *Client) List(ctx context.Context, p ListParams) (v0.ServerListResponse, error) {
	q := url.Values{}
	if p.Search != "" {
		q.Set("search", p.Search)
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Latest {
		q.Set("version", "latest")
	}
	if !p.UpdatedSince.IsZero() {
		q.Set("updated_since", p.UpdatedSince.UTC().Format(time.RFC3339))
	}
	var out v0.ServerListResponse
	err := c.get(ctx, "/v0.1/servers?"+q.Encode(), &out)
	return out, err
}

// Versions reads every version of the server named name.
func (c *Client) Versions(ctx context.Context, name string) (v0.ServerListResponse, error) {
	var out v0.ServerListResponse
	err := c.get(ctx, "/v0.1/servers/"+url.PathEscape(name)+"/versions", &out)
	return out, err
}

// Version reads one version ("latest", or exact) of the server.
func (c *Client) Version(ctx context.Context, name, version string) (v0.ServerResponse, error) {
	var out v0.ServerResponse
	err := c.get(ctx, "/v0.1/servers/"+url.PathEscape(name)+"/versions/"+url.PathEscape(version), &out)
	return out, err
}

// ErrNotFound is a server or version the registry does not have.
var ErrNotFound = errors.New("the registry has no such server or version")

func (c *Client) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("the registry %s could not be reached: %w", c.Base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return fmt.Errorf("read the registry's answer: %w", err)
	case len(body) > maxAnswer:
		return fmt.Errorf("the registry's answer is over %d MiB: refused", maxAnswer>>20)
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("the registry answered %s", resp.Status)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("the registry's answer is not what API v0.1 sends: %w", err)
	}
	return nil
}
