package views

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"
)

// The two pages that grow with the catalog, rendered alone (no store, no
// HTTP): a server with 500 tools and a list of 200 servers. Issue 21 asks
// them to stay within 1.2× of their render times before its redesign;
// cmd/bench times the same pages through the whole app.

func BenchmarkServerPage500Tools(b *testing.B) {
	d := ServerDetail{Item: ServerItem{ID: "big", Name: "big", Transport: "stdio", Status: "success", Enabled: true}, DefaultPolicy: "ask"}
	for i := range 500 {
		d.Tools = append(d.Tools, ToolItem{Key: fmt.Sprint(i), ServerID: "big", Name: fmt.Sprintf("tool_%03d", i), Title: fmt.Sprintf("Tool %03d", i),
			Description: "Searches the record catalogue for entries matching a free-text query. This is generated fixture tool number 1.",
			InputSchema: `{"properties":{"query":{"type":"string","description":"Free text."},"limit":{"type":"integer"}},"required":["query"],"type":"object"}`,
			Annotations: []Annotation{{"destructiveHint", "false"}, {"idempotentHint", "true"}, {"openWorldHint", "false"}, {"readOnlyHint", "true"}},
			State:       "active", Policy: "ask", Effective: "ask", AgentName: fmt.Sprintf("big__tool_%03d", i), PolicyReason: "ask: the server's default policy"})
	}
	for b.Loop() {
		if err := ServerPage(Page{Title: "big"}, d).Render(context.Background(), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkServersPage200(b *testing.B) {
	at := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	var list []ServerItem
	for i := range 200 {
		list = append(list, ServerItem{ID: fmt.Sprintf("srv-%d", i), Name: fmt.Sprintf("Server %d", i), Transport: "stdio", Status: "success", Enabled: true,
			ToolCount: 50, VerifiedAt: at, Delta: "+50", Fresh: Freshness{State: "fresh", Until: at.Add(5 * time.Minute)}})
	}
	for b.Loop() {
		if err := ServersPage(Page{Title: "Servers"}, list, nil).Render(context.Background(), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
