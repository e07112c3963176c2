package gateway_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// An MCP App comes through: the tool's _meta names its ui:// resource as
// agents are offered it (the ui:// scheme kept, the server named), the
// resource is listed under that URI, and a read of it returns the page,
// in both protocol eras.
func TestAnMCPAppsResourceIsOfferedAndRead(t *testing.T) {
	e := newEnv(t)
	e.fixture("app", []string{"-tools", "1", "-app"}, "show_clock")
	const offered = "ui://app/clock/app.html" // the server's ui://clock/app.html
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c := mcptest.ConnectAs(t, e.base, testMCPToken, version, mcp.Implementation{Name: "app-host", Version: "1"})
			list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list.Tools, func(tl mcp.Tool) bool { return tl.Name == "app__show_clock" })
			if i < 0 {
				t.Fatalf("app__show_clock not offered")
			}
			var meta struct {
				UI struct {
					ResourceURI string `json:"resourceUri"`
				} `json:"ui"`
			}
			raw, _ := json.Marshal(list.Tools[i].Meta)
			if err := json.Unmarshal(raw, &meta); err != nil || meta.UI.ResourceURI != offered {
				t.Errorf("the tool's _meta = %s; want ui.resourceUri %q", raw, offered)
			}
			resources, _ := c.ResourceURIs(t)
			if !slices.Contains(resources, offered) {
				t.Errorf("resources = %q; want %q", resources, offered)
			}
			read, err := c.Read(offered)
			if err != nil {
				t.Fatal(err)
			}
			if len(read.Contents) != 1 {
				t.Fatalf("read = %+v", read.Contents)
			}
			page, ok := read.Contents[0].(mcp.TextResourceContents)
			if !ok || page.URI != offered || page.MIMEType != "text/html;profile=mcp-app" || !strings.Contains(page.Text, `<h1 id="clock">`) {
				t.Errorf("read %q = %+v; want the app's page under the offered URI", offered, read.Contents[0])
			}
		})
	}
}
