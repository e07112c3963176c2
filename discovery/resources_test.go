package discovery

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// newResourceServer is an mcp-go server with one tool, n resources, one
// resource template and n prompts, each list paged by page entries.
func newResourceServer(n, page int, opts ...server.ServerOption) *server.MCPServer {
	s := newToolServer(1, append([]server.ServerOption{
		server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false),
		server.WithPaginationLimit(page)}, opts...)...)
	for i := range n {
		s.AddResource(mcp.NewResource(fmt.Sprintf("file:///r/%03d", i), fmt.Sprintf("r%03d", i),
			mcp.WithResourceDescription("Resource."), mcp.WithMIMEType("text/plain")),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
		s.AddPrompt(mcp.NewPrompt(fmt.Sprintf("p%03d", i), mcp.WithPromptDescription("Prompt."),
			mcp.WithArgument("topic", mcp.ArgumentDescription("What about."), mcp.RequiredArgument())),
			func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil })
	}
	s.AddResourceTemplate(mcp.NewResourceTemplate("file:///t/{id}", "by id", mcp.WithTemplateDescription("Template.")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
	return s
}

func TestResourcesAndPromptsListed(t *testing.T) {
	u := serveStreamable(t, newResourceServer(7, 3))
	var phases []string
	res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: u}, func(p Progress) {
		if !slices.Contains(phases, p.Phase) {
			phases = append(phases, p.Phase)
		}
	})
	if e != nil {
		t.Fatalf("Verify = %v", e)
	}
	if len(res.Tools) != 1 || len(res.Resources) != 7 || len(res.ResourceTemplates) != 1 || len(res.Prompts) != 7 {
		t.Fatalf("tools, resources, templates, prompts = %d, %d, %d, %d; want 1, 7, 1, 7",
			len(res.Tools), len(res.Resources), len(res.ResourceTemplates), len(res.Prompts))
	}
	r := res.Resources[0]
	if r.URI != "file:///r/000" || r.Name != "r000" || r.Description != "Resource." || r.MIMEType != "text/plain" || r.Pin == "" || r.State != "" || len(r.Raw) == 0 {
		t.Errorf("Resources[0] = %+v", r)
	}
	if tp := res.ResourceTemplates[0]; tp.URITemplate != "file:///t/{id}" || tp.Name != "by id" || tp.Pin == "" {
		t.Errorf("ResourceTemplates[0] = %+v", tp)
	}
	p := res.Prompts[0]
	want := []PromptArgument{{Name: "topic", Description: "What about.", Required: true}}
	if p.Name != "p000" || p.Description != "Prompt." || !slices.Equal(p.Arguments, want) || p.Pin == "" {
		t.Errorf("Prompts[0] = %+v", p)
	}
	for _, ph := range []string{PhaseListing, PhaseResources, PhaseResourceTemplates, PhasePrompts} {
		if !slices.Contains(phases, ph) {
			t.Errorf("phases %q lack %q", phases, ph)
		}
		if !slices.ContainsFunc(res.Timings, func(tm Timing) bool { return tm.Phase == ph }) {
			t.Errorf("Timings %+v lack %q", res.Timings, ph)
		}
	}
	if len(res.Warnings) != 0 {
		t.Errorf("Warnings = %q", res.Warnings)
	}
}

func TestResourcesNotDeclared(t *testing.T) {
	u := serveStreamable(t, newToolServer(2))
	res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: u}, nil)
	if e != nil {
		t.Fatalf("Verify = %v", e)
	}
	if res.Resources != nil || res.ResourceTemplates != nil || res.Prompts != nil {
		t.Errorf("resources, templates, prompts = %v, %v, %v; want none", res.Resources, res.ResourceTemplates, res.Prompts)
	}
}

func TestResourceAndPromptBounds(t *testing.T) {
	endless := &server.Hooks{}
	n := 0
	endless.AddAfterListResources(func(_ context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		n++
		res.NextCursor = mcp.Cursor(base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "c%d", n)))
	})
	repeat := &server.Hooks{}
	repeat.AddAfterListPrompts(func(_ context.Context, _ any, _ *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
		res.NextCursor = mcp.Cursor(base64.StdEncoding.EncodeToString([]byte("again")))
	})
	failing := &server.Hooks{}
	failing.AddOnRequestInitialization(func(_ context.Context, _ any, msg any) error {
		if raw, ok := msg.(json.RawMessage); ok && strings.Contains(string(raw), `"prompts/list"`) {
			return errors.New("prompts are broken")
		}
		return nil
	})
	huge := newResourceServer(1, 10)
	huge.AddPrompt(mcp.NewPrompt("huge", mcp.WithPromptDescription(strings.Repeat("x", 100<<10))),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil })

	for _, c := range []struct {
		name      string
		srv       *server.MCPServer
		limits    Limits
		resources int
		prompts   int
		warning   string
	}{
		{"endless resource pages", newResourceServer(2, 1, server.WithHooks(endless)), Limits{MaxPages: 5}, 1, 2, "stopped after 5 pages of resources/list"},
		{"repeated prompt cursor", newResourceServer(3, 1, server.WithHooks(repeat)), Limits{}, 3, 1, "prompts/list repeated cursor"},
		{"too many", newResourceServer(12, 5), Limits{MaxTools: 10}, 10, 10, "server lists more than 10 resources; the first 10 are kept"},
		{"failing prompts", newResourceServer(2, 10, server.WithHooks(failing)), Limits{}, 2, 0, "prompts/list failed, so the server's prompts are not listed"},
		{"huge prompt", huge, Limits{}, 1, 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, e, _ := verify(t, c.limits, Target{Transport: TransportHTTP, URL: serveStreamable(t, c.srv)}, nil)
			if e != nil {
				t.Fatalf("Verify = %v; want success", e)
			}
			if len(res.Tools) != 1 || len(res.Resources) != c.resources || len(res.Prompts) != c.prompts {
				t.Errorf("tools, resources, prompts = %d, %d, %d; want 1, %d, %d", len(res.Tools), len(res.Resources), len(res.Prompts), c.resources, c.prompts)
			}
			if c.name == "failing prompts" && !slices.Equal(res.Unlisted, []string{"prompts/list"}) {
				t.Errorf("Unlisted = %q; want prompts/list", res.Unlisted)
			}
			if c.warning != "" && !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, c.warning) }) {
				t.Errorf("Warnings = %q; want one with %q", res.Warnings, c.warning)
			}
		})
	}
	t.Run("huge prompt kept oversized", func(t *testing.T) {
		res, e, _ := verify(t, Limits{}, Target{Transport: TransportHTTP, URL: serveStreamable(t, huge)}, nil)
		if e != nil {
			t.Fatal(e)
		}
		i := slices.IndexFunc(res.Prompts, func(p Prompt) bool { return p.Name == "huge" })
		if i < 0 {
			t.Fatalf("Prompts = %+v; want huge", res.Prompts)
		}
		p := res.Prompts[i]
		if p.State != ToolOversized || len(p.Description) != DefaultLimits.DescriptionBytes || len(p.Problems) == 0 {
			t.Errorf("huge: State %q, description %d bytes, Problems %q; want oversized, %d, a problem", p.State, len(p.Description), p.Problems, DefaultLimits.DescriptionBytes)
		}
	})
}

func TestDecodeEntries(t *testing.T) {
	for _, c := range []struct {
		name  string
		raw   string
		state ToolState
		err   bool
	}{
		{"sound", `{"name":"p","description":"d","arguments":[{"name":"a","required":true}]}`, "", false},
		{"duplicate keys", `{"name":"p","name":"q"}`, ToolInvalid, false},
		{"invalid utf-8", "{\"name\":\"p\",\"description\":\"\xff\"}", ToolInvalid, false},
		{"wrong type", `{"name":"p","arguments":"x"}`, "", true},
		{"not an object", `[1]`, "", true},
	} {
		p, err := decodePrompt(json.RawMessage(c.raw), DefaultLimits)
		if (err != nil) != c.err || p.State != c.state {
			t.Errorf("%s: decodePrompt = %q, %v; want state %q, error %v", c.name, p.State, err, c.state, c.err)
		}
	}
}

func FuzzDecodeEntries(f *testing.F) {
	f.Add([]byte(`{"uri":"file:///a","name":"a","size":3,"annotations":{"audience":["user"]}}`))
	f.Add([]byte(`{"name":"p","arguments":[{"name":"a"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := Limits{}.withDefaults()
		decodeResource(b, l)
		decodeResourceTemplate(b, l)
		if p, err := decodePrompt(b, l); err == nil && len(p.Description) > l.DescriptionBytes {
			t.Errorf("description %d bytes over the limit", len(p.Description))
		}
	})
}

// The fixture's hostile-resources mode over stdio: endless resource
// pages stop at the page bound, a failing templates list is a warning,
// a 1 MiB prompt description is cut and flagged; the tools, the sound
// prompt and the verification itself survive.
func TestHostileResourcesFixture(t *testing.T) {
	res, e, _ := verify(t, Limits{MaxPages: 20}, fixtureTarget("hostile-resources"), nil)
	if e != nil {
		t.Fatalf("Verify = %v; want success", e)
	}
	if len(res.Tools) == 0 || len(res.Resources) != 20 || res.ResourceTemplates != nil || len(res.Prompts) != 2 {
		t.Errorf("tools, resources, templates, prompts = %d, %d, %v, %d; want some, 20, nil, 2", len(res.Tools), len(res.Resources), res.ResourceTemplates, len(res.Prompts))
	}
	for _, want := range []string{"stopped after 20 pages of resources/list", "resources/templates/list failed"} {
		if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("Warnings = %q; want one with %q", res.Warnings, want)
		}
	}
	if !slices.Equal(res.Unlisted, []string{"resources/templates/list"}) {
		t.Errorf("Unlisted = %q", res.Unlisted)
	}
	for _, w := range res.Warnings {
		if strings.ContainsAny(w, "\x1b") {
			t.Errorf("warning %q holds a control character", w)
		}
	}
	if i := slices.IndexFunc(res.Prompts, func(p Prompt) bool { return p.Name == "huge" }); i < 0 || res.Prompts[i].State != ToolOversized ||
		len(res.Prompts[i].Description) > DefaultLimits.DescriptionBytes || res.Prompts[i].Raw != nil {
		t.Errorf("Prompts = %+v; want huge oversized, cut, without Raw", res.Prompts)
	}
}
