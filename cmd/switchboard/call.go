package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
)

// callOutput is what `switchboard call --json` prints.
type callOutput struct {
	OK              bool            `json:"ok"`
	Transport       string          `json:"transport"`
	Target          string          `json:"target"`
	Tool            string          `json:"tool"`
	ProtocolVersion string          `json:"protocol_version,omitempty"`
	Server          *serverInfo     `json:"server,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"` // the CallToolResult
	TotalMS         float64         `json:"total_ms"`
	Error           *verifyError    `json:"error,omitempty"`
}

// call starts or connects to a server as a verification does (the same
// sandbox, limits and deadlines), lists its tools, calls one, prints the
// result and stops the server. It exits 0 when the tool answered, 1 when
// anything failed or the tool reported an error (isError), 2 on bad usage.
func call(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs, asJSON, tf := targetCommand("call", callUsage, stderr)
	callTimeout := fs.Duration("call-timeout", 30*time.Second, "deadline for the call itself")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2}
	}
	server, tool, arguments, err := splitCall(fs.Args())
	if err != nil {
		fmt.Fprint(stderr, callUsage+"(switchboard call -h lists the flags)\n")
		return err
	}
	t, limits, err := tf.target(server)
	if err != nil {
		return err
	}

	start := time.Now()
	out := callOutput{Transport: t.Transport, Target: t.URL, Tool: tool}
	if t.Transport == discovery.TransportStdio {
		out.Target = strings.Join(server, " ")
	}
	v := walled(discovery.NewVerifier(limits, getenv), getenv)
	var res *mcp.CallToolResult
	err = tf.oauth.signingIn(ctx, v, &t, stderr, func() (err error) {
		res, err = callTool(ctx, v, t, tool, arguments, *callTimeout, limits.MessageBytes, &out)
		return err
	})
	out.TotalMS = float64(time.Since(start).Microseconds()) / 1000
	if err == nil {
		out.Result, err = json.Marshal(res)
	}
	var derr *discovery.Error
	switch {
	case errors.As(err, &derr):
		out.Error = errorJSON(derr)
	case err != nil:
		out.Error = &verifyError{Class: "call", Message: err.Error()}
	case res.IsError:
		out.Error = &verifyError{Class: "tool", Message: "the tool reported an error (isError)"}
	}
	out.OK = out.Error == nil

	if *asJSON {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else if res != nil {
		printContent(stdout, res)
	}
	if out.Error != nil {
		msg := fmt.Sprintf("call failed: %s", out.Error.Message)
		if out.Error.Phase != "" {
			msg = fmt.Sprintf("call failed: %s in %s: %s", out.Error.Class, out.Error.Phase, out.Error.Message)
		}
		if out.Error.Suggestion != "" && !*asJSON {
			msg += "\n  " + out.Error.Suggestion
		}
		return &exitError{code: 1, msg: msg}
	}
	return nil
}

const callUsage = "usage: switchboard call [--json] [--env K=V]... -- CMD ARGS... TOOL ['{JSON arguments}']\n" +
	"       switchboard call [--json] [--transport sse] [--header 'K: V']... URL TOOL ['{JSON arguments}']\n"

// splitCall splits what follows the flags into the server (a URL, or a
// command and its arguments), the tool and its JSON arguments: the last
// argument is the arguments when it starts with "{" (no tool name can),
// and the one before them is the tool.
func splitCall(rest []string) (server []string, tool string, arguments map[string]any, err error) {
	if n := len(rest); n > 0 && strings.HasPrefix(strings.TrimSpace(rest[n-1]), "{") {
		dec := json.NewDecoder(strings.NewReader(rest[n-1]))
		dec.UseNumber() // numbers reach the server as typed
		if err := dec.Decode(&arguments); err != nil {
			return nil, "", nil, usageError("the arguments are not a JSON object: %v", err)
		}
		if dec.More() {
			return nil, "", nil, usageError("the arguments are more than one JSON object")
		}
		rest = rest[:n-1]
	}
	if len(rest) < 2 {
		return nil, "", nil, usageError("call needs a server (a URL, or a command after --) and a tool name")
	}
	return rest[:len(rest)-1], rest[len(rest)-1], arguments, nil
}

// callTool opens a session to t, checks that the server lists tool as a
// tool Switchboard would call, and calls it with arguments within
// timeout; a result over maxResult bytes is refused. out gets what the
// server said it is.
func callTool(ctx context.Context, v *discovery.Verifier, t discovery.Target, tool string, arguments map[string]any,
	timeout time.Duration, maxResult int, out *callOutput) (*mcp.CallToolResult, error) {
	s, err := v.Open(ctx, t, 0)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	name, version, protocol := s.ServerInfo()
	out.Server, out.ProtocolVersion = &serverInfo{Name: name, Version: version}, protocol
	listed, ok := s.Tools()[tool]
	switch {
	case !ok:
		return nil, fmt.Errorf("the server lists no tool %q; it lists %s", tool, toolNames(s.Tools()))
	case listed.State == discovery.ToolInvalid, listed.State == discovery.ToolUnsupported:
		return nil, fmt.Errorf("tool %q is not called: it %s", tool, strings.Join(listed.Problems, "; it "))
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.Call(callCtx, tool, listed.Pin, arguments, maxResult)
}

// toolNames lists names for a message: sorted, at most 20.
func toolNames(tools map[string]discovery.Tool) string {
	if len(tools) == 0 {
		return "none"
	}
	names := make([]string, 0, len(tools))
	for name := range tools {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) > 20 {
		return strings.Join(names[:20], ", ") + fmt.Sprintf(" and %d more", len(names)-20)
	}
	return strings.Join(names, ", ")
}

// printContent prints a tool result for a person: text as it is, other
// content as a line saying what it is.
func printContent(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			fmt.Fprintln(w, c.Text)
		case mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes of base64]\n", c.MIMEType, len(c.Data))
		case mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes of base64]\n", c.MIMEType, len(c.Data))
		case mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case mcp.EmbeddedResource:
			fmt.Fprintln(w, "[embedded resource]")
		default:
			fmt.Fprintf(w, "[%T]\n", c)
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			fmt.Fprintf(w, "structured: %s\n", b)
		}
	}
}
