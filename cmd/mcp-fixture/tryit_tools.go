package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The tools -mode try-it serves besides the generated ones: what a "Try
// it" form and its result view must handle. plan_trip takes arrays of
// objects and of strings and answers its arguments as JSON; media answers
// an image and a sound; hostile_media answers media a page must not
// show (an SVG, broken base64, a huge blob, a sound declared as HTML);
// slow_steps sends notifications/progress while it works.

// tryItTools returns the try-it tools with their handlers.
func tryItTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewToolWithRawSchema("plan_trip", "Plans a trip through several stops and answers the plan as JSON.", json.RawMessage(planTripSchema)), Handler: planTrip},
		{Tool: mcp.NewTool("media", mcp.WithDescription("Answers a small test card (PNG) and a short tone (WAV).")), Handler: media},
		{Tool: mcp.NewTool("hostile_media", mcp.WithDescription("Answers media a page must refuse: an SVG with a script, broken base64, a 600 KiB blob, a sound declared as HTML.")), Handler: hostileMedia},
		{Tool: mcp.NewTool("slow_steps", mcp.WithDescription("Works through steps, reporting progress after each."),
			mcp.WithInteger("steps", mcp.DefaultNumber(5), mcp.Min(1), mcp.Max(100), mcp.Description("How many steps.")),
			mcp.WithInteger("delay_ms", mcp.DefaultNumber(300), mcp.Min(0), mcp.Max(10000), mcp.Description("Pause before each step, in milliseconds."))), Handler: slowSteps},
	}
}

const planTripSchema = `{"type":"object","properties":{
	"traveller":{"type":"string","description":"Who travels.","minLength":1},
	"stops":{"type":"array","description":"The stops, in order.","minItems":1,"items":{"type":"object","properties":{
		"city":{"type":"string","description":"Where."},
		"nights":{"type":"integer","minimum":1,"maximum":30,"description":"How many nights."},
		"by":{"type":"string","enum":["train","bus","plane"],"description":"How to get there."},
		"booked":{"type":"boolean"}
	},"required":["city","nights"]}},
	"tags":{"type":"array","items":{"type":"string"},"description":"Labels for the trip."},
	"budget":{"type":"number","minimum":0}
},"required":["traveller","stops"]}`

// planTrip answers its arguments as indented JSON text.
func planTrip(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(req.GetArguments()); err != nil {
		return mcp.NewToolResultErrorf("cannot encode arguments: %v", err), nil
	}
	return mcp.NewToolResultText(b.String()), nil
}

// media answers a 64×40 test card and a 0.3 s tone.
func media(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		mcp.NewTextContent("A test card and a tone."),
		mcp.NewImageContent(base64.StdEncoding.EncodeToString(testCard()), "image/png"),
		mcp.NewAudioContent(base64.StdEncoding.EncodeToString(tone()), "audio/wav"),
	}}, nil
}

// hostileMedia answers media no page should show as it came.
func hostileMedia(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	svg := `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>`
	return &mcp.CallToolResult{Content: []mcp.Content{
		mcp.NewImageContent(base64.StdEncoding.EncodeToString([]byte(svg)), "image/svg+xml"),
		mcp.NewImageContent("iVBORw0KGgo!!!not base64", "image/png"),
		mcp.NewImageContent(base64.StdEncoding.EncodeToString(append(testCard(), make([]byte, 600<<10)...)), "image/png"),
		mcp.NewAudioContent(base64.StdEncoding.EncodeToString([]byte("<script>alert(3)</script>")), "text/html"),
		mcp.NewImageContent(base64.StdEncoding.EncodeToString([]byte(svg)), "image/png"),
	}}, nil
}

// slowSteps pauses before each step and reports it as progress, if the
// caller asked for progress.
func slowSteps(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	steps := min(max(req.GetInt("steps", 5), 1), 100)
	delay := time.Duration(min(max(req.GetInt("delay_ms", 300), 0), 10000)) * time.Millisecond
	var token mcp.ProgressToken
	if m := req.Params.Meta; m != nil {
		token = m.ProgressToken
	}
	for i := 1; i <= steps; i++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		if token == nil {
			continue
		}
		if s := server.ServerFromContext(ctx); s != nil {
			_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": token, "progress": i, "total": steps, "message": fmt.Sprintf("step %d of %d <done>", i, steps),
			})
		}
	}
	if token != nil {
		// mcp-go writes notifications from a goroutine of its own, so
		// the last one could follow the result: give it time to go first.
		time.Sleep(100 * time.Millisecond)
	}
	return mcp.NewToolResultText(fmt.Sprintf("done after %d steps", steps)), nil
}

// testCard is a 64×40 PNG of colour bars.
func testCard() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 40))
	bars := []color.RGBA{{0xee, 0xee, 0xee, 0xff}, {0xee, 0xee, 0x22, 0xff}, {0x22, 0xee, 0xee, 0xff}, {0x22, 0xee, 0x22, 0xff},
		{0xee, 0x22, 0xee, 0xff}, {0xee, 0x22, 0x22, 0xff}, {0x22, 0x22, 0xee, 0xff}, {0x11, 0x11, 0x11, 0xff}}
	for x := range 64 {
		for y := range 40 {
			img.Set(x, y, bars[x/8])
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // an in-memory RGBA image always encodes
	return buf.Bytes()
}

// tone is 0.3 s of a 440 Hz sine as 8 kHz 8-bit mono WAV.
func tone() []byte {
	const rate, n = 8000, 2400
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) } // a bytes.Buffer never fails
	b.WriteString("RIFF")
	le(uint32(36 + n))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1)) // PCM
	le(uint16(1)) // mono
	le(uint32(rate))
	le(uint32(rate)) // bytes per second
	le(uint16(1))    // block align
	le(uint16(8))    // bits per sample
	b.WriteString("data")
	le(uint32(n))
	for i := range n {
		b.WriteByte(byte(128 + 60*math.Sin(2*math.Pi*440*float64(i)/rate)))
	}
	return b.Bytes()
}
