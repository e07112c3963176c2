package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// -listed serves what the conformance suite's resource and prompt
// scenarios read, with the contents they check.
func TestListedServesConformanceEntries(t *testing.T) {
	url := startInProcess(t, "-transport", "http", "-addr", "127.0.0.1:0", "-listed")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	trans, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := initialize(ctx, t, c)
	if init.Capabilities.Resources == nil || init.Capabilities.Prompts == nil {
		t.Fatalf("capabilities = %+v; want resources and prompts", init.Capabilities)
	}
	res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(res.Resources) != 2 {
		t.Fatalf("resources/list = %+v, %v; want the two static resources", res, err)
	}
	read := func(uri string) mcp.ResourceContents {
		t.Helper()
		r, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		if err != nil || len(r.Contents) != 1 {
			t.Fatalf("read %s = %+v, %v", uri, r, err)
		}
		return r.Contents[0]
	}
	if txt, ok := read("test://template/123/data").(mcp.TextResourceContents); !ok || !strings.Contains(txt.Text, `"id":"123"`) {
		t.Errorf("template read = %+v; want the id substituted", txt)
	}
	if blob, ok := read("test://static-binary").(mcp.BlobResourceContents); !ok || blob.MIMEType != "image/png" || blob.Blob != listedPNG {
		t.Errorf("binary read = %+v", blob)
	}
	p, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "test_prompt_with_arguments",
		Arguments: map[string]string{"arg1": "one", "arg2": "two"}}})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("get = %+v, %v", p, err)
	}
	if txt, ok := p.Messages[0].Content.(mcp.TextContent); !ok || txt.Text != "Prompt with arguments: arg1='one', arg2='two'" {
		t.Errorf("message = %+v", p.Messages[0].Content)
	}
}
