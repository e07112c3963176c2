package main

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// -listed serves, beside the tools, the resources, resource template and
// prompts the MCP conformance suite's server scenarios read, with the
// contents they expect (resources-read-text, resources-read-binary,
// resources-templates-read, prompts-get-*): so that a client, or a
// gateway in front of this server, can be held to those scenarios.

// listedPNG is a 1×1 transparent PNG, the image of the binary resource
// and of the image prompt.
const listedPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// listedOptions declare the resources (with subscriptions, which mcp-go
// accepts for any URI), prompts and completions capabilities (mcp-go
// completes with no values).
var listedOptions = []server.ServerOption{server.WithResourceCapabilities(true, true), server.WithPromptCapabilities(true), server.WithCompletions()}

// addListed adds the suite's resources, template and prompts to s (made
// with listedOptions).
func addListed(s *server.MCPServer) {
	s.AddResource(mcp.NewResource("test://static-text", "static-text",
		mcp.WithResourceDescription("A static text resource."), mcp.WithMIMEType("text/plain")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain",
				Text: "This is the content of the static text resource."}}, nil
		})
	s.AddResource(mcp.NewResource("test://static-binary", "static-binary",
		mcp.WithResourceDescription("A static binary resource (a PNG image)."), mcp.WithMIMEType("image/png")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.BlobResourceContents{URI: req.Params.URI, MIMEType: "image/png", Blob: listedPNG}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("test://template/{id}/data", "template-data",
		mcp.WithTemplateDescription("Data for an id."), mcp.WithTemplateMIMEType("application/json")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			id := fmt.Sprint(req.Params.Arguments["id"])
			if ids, ok := req.Params.Arguments["id"].([]string); ok && len(ids) == 1 {
				id = ids[0]
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json",
				Text: fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id, id)}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("test_simple_prompt", mcp.WithPromptDescription("A simple prompt without arguments.")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("A simple prompt", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("This is a simple prompt for testing.")),
			}), nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_arguments", mcp.WithPromptDescription("A prompt with two arguments."),
		mcp.WithArgument("arg1", mcp.ArgumentDescription("First test argument"), mcp.RequiredArgument()),
		mcp.WithArgument("arg2", mcp.ArgumentDescription("Second test argument"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := req.Params.Arguments
			return mcp.NewGetPromptResult("A prompt with arguments", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]))),
			}), nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_embedded_resource", mcp.WithPromptDescription("A prompt that embeds a resource."),
		mcp.WithArgument("resourceUri", mcp.ArgumentDescription("URI of the resource to embed"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("A prompt with an embedded resource", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: req.Params.Arguments["resourceUri"],
					MIMEType: "text/plain", Text: "Embedded resource content for testing."})),
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Please process the embedded resource above.")),
			}), nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_image", mcp.WithPromptDescription("A prompt with an image.")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("A prompt with an image", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewImageContent(listedPNG, "image/png")),
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Please analyze the image above.")),
			}), nil
		})
}
