package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/switchboard-dev/switchboard/internal/clientconfig"
	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/held"
	"github.com/switchboard-dev/switchboard/web/internal/onboard"
	"github.com/switchboard-dev/switchboard/web/internal/present"
)

// maxImport caps the text of one pasted or uploaded config; a file found
// on this machine may be bigger (~/.claude.json keeps a lot besides its
// servers), up to maxKnownFile.
const (
	maxImport    = 1 << 20
	maxKnownFile = 16 << 20
)

// heldImport is the text of a previewed import, kept on the server so
// that neither the preview page nor the apply form carries the config back
// to the browser: it holds secret values, which the UI never shows. A
// preview is applied within the hour, and only the latest few are kept.
type heldImport struct{ text, format string }

func newHeldImports() *held.Map[heldImport] { return held.New[heldImport](time.Hour, 16) }

// knownFiles lists the client configs found on this machine.
func (s *Server) knownFiles() []clientconfig.Location {
	cwd := s.cfg.ImportCwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	return clientconfig.WellKnown(s.home(), cwd)
}

// home is the user's home, where the clients keep their configs.
func (s *Server) home() string {
	if s.cfg.ImportHome != "" {
		return s.cfg.ImportHome
	}
	home, _ := os.UserHomeDir()
	return home
}

func (s *Server) importView(ctx context.Context, text, format string) views.ImportView {
	v := views.ImportView{Text: text, Format: format, Formats: clientconfig.Formats}
	for _, k := range s.knownFiles() {
		v.Known = append(v.Known, views.KnownFile{Key: onboard.Key(k.Path), Path: k.Path, Client: k.Client, Format: k.Format})
	}
	if sums, err := s.deps.Store.Summaries(ctx); err == nil {
		for _, sum := range sums {
			v.Servers = append(v.Servers, sum.Server.ID)
		}
	}
	return v
}

// handleImportPage serves GET /import.
func (s *Server) handleImportPage(c echo.Context) error {
	ctx := c.Request().Context()
	return render(c, http.StatusOK, views.ImportPage(s.page(c, "Import"), s.importView(ctx, "", "")))
}

// importText reads what to import from the form: a file found on this
// machine (by its key in knownFiles, never a path from the request), an
// uploaded file, or the pasted text. source names the file it came from
// ("" for pasted text): text from a file is never sent back to the
// browser, as it may hold secrets the person never typed here.
func (s *Server) importText(c echo.Context) (text, format, source string, err error) {
	format = c.FormValue("format")
	if k := c.FormValue("known"); k != "" {
		for _, known := range s.knownFiles() {
			if onboard.Key(known.Path) == k {
				data, err := readCapped(known.Path, maxKnownFile)
				return string(data), known.Format, known.Path, err
			}
		}
		return "", "", "", &apiError{Status: http.StatusNotFound, Message: "that file is no longer there; reload the page"}
	}
	if fh, err := c.FormFile("file"); err == nil && fh.Size > 0 {
		f, err := fh.Open()
		if err != nil {
			return "", format, fh.Filename, err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxImport+1))
		if err == nil && len(data) > maxImport {
			err = errImportTooBig
		}
		return string(data), format, "the uploaded file " + fh.Filename, err
	}
	text = c.FormValue("text")
	if len(text) > maxImport {
		return "", format, "", errImportTooBig
	}
	return text, format, "", nil
}

var errImportTooBig = &apiError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("the config is over %d KiB", maxImport>>10)}

func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &apiError{Status: http.StatusUnprocessableEntity, Message: "cannot read " + path + ": " + errors.Unwrap(err).Error()}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("%s is over %d MiB", path, limit>>20)}
	}
	return data, err
}

// handleImportPreview serves POST /import/preview: the dry run.
func (s *Server) handleImportPreview(c echo.Context) error {
	ctx := c.Request().Context()
	text, format, source, err := s.importText(c)
	v := s.importView(ctx, text, format)
	v.Source = source
	if source != "" {
		v.Text = "" // from a file: never sent back
	}
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			return err
		}
		v.Error = ae.Message
		return render(c, ae.Status, views.ImportPage(s.page(c, "Import"), v))
	}
	if strings.TrimSpace(text) == "" {
		v.Error = "Paste a config, upload one, or read one found on this machine."
		return render(c, http.StatusUnprocessableEntity, views.ImportPage(s.page(c, "Import"), v))
	}
	plan, err := serverconfig.PlanImport(ctx, s.deps.Store, format, []byte(text))
	if err != nil {
		return s.importFailed(c, v, err)
	}
	v.Text = "" // held by the server, see heldImport
	v.Plan = present.ImportPlan(plan)
	v.Plan.HeldID = randomHex(16)
	s.holds.imports.Put(v.Plan.HeldID, heldImport{text: text, format: format})
	return render(c, http.StatusOK, views.ImportPage(s.page(c, "Import"), v))
}

// importFailed shows why a text could not be read, pointing at the line
// and column; pasted text is kept (and the line shown), a file's is not.
func (s *Server) importFailed(c echo.Context, v views.ImportView, err error) error {
	v.Error = err.Error()
	if v.Source != "" {
		v.Error = v.Source + ": " + v.Error
	}
	var se *clientconfig.SyntaxError
	if errors.As(err, &se) {
		v.ErrorLine, v.ErrorCol = se.Pos.Line, se.Pos.Col
		if v.Text != "" {
			v.Excerpt, v.Caret = clientconfig.Excerpt(v.Text, se.Pos.Line, se.Pos.Col)
		}
	}
	return render(c, http.StatusUnprocessableEntity, views.ImportPage(s.page(c, "Import"), v))
}

// handleImportApply serves POST /import/apply: the plan of the same text,
// with the choices made on it (by row), applied.
func (s *Server) handleImportApply(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.FormValue("held")
	held, ok := s.holds.imports.Get(id)
	if !ok {
		v := s.importView(ctx, "", "")
		v.Error = "That preview is no longer held (it is kept for an hour); paste or read the config again."
		return render(c, http.StatusGone, views.ImportPage(s.page(c, "Import"), v))
	}
	v := s.importView(ctx, "", held.format)
	plan, err := serverconfig.PlanImport(ctx, s.deps.Store, held.format, []byte(held.text))
	if err != nil {
		return s.importFailed(c, v, err) // without the text: it was held, not typed here
	}
	// A row that would do something else than the preview showed (the
	// store changed meanwhile) is not applied: the person sees the new
	// plan and chooses again.
	choices := map[int]string{}
	var moved []string
	for i, r := range plan.Rows {
		ch := c.FormValue("choice-" + strconv.Itoa(i))
		if ch == "" {
			continue
		}
		if c.FormValue("fp-"+strconv.Itoa(i)) != r.Fingerprint && ch != serverconfig.ChoiceSkip {
			moved = append(moved, r.Name)
			ch = serverconfig.ChoiceSkip
		}
		choices[i] = ch
	}
	if len(moved) > 0 {
		v.Error = "Nothing was imported: what these entries would do changed since the preview: " + strings.Join(moved, ", ") + ". Review the plan below and import again."
		v.Plan = present.ImportPlan(plan)
		v.Plan.HeldID = id
		return render(c, http.StatusConflict, views.ImportPage(s.page(c, "Import"), v))
	}
	res := serverconfig.ApplyImport(ctx, namingStore{s.deps.Store, byOf(ctx)}, plan, choices)
	if res.Failed > 0 {
		v.Error = "Some entries were not imported: " + strings.Join(res.Lines, "; ")
		if plan, err := serverconfig.PlanImport(ctx, s.deps.Store, held.format, []byte(held.text)); err == nil {
			v.Plan = present.ImportPlan(plan)
			v.Plan.HeldID = id
		}
		return render(c, http.StatusUnprocessableEntity, views.ImportPage(s.page(c, "Import"), v))
	}
	s.holds.imports.Delete(id)
	// The servers added or updated whose launch waits for a person lead to
	// their confirmation, together.
	q := url.Values{"imported": {fmt.Sprintf("%d.%d.%d", res.Added, res.Updated, res.Skipped)}}
	if sums, err := s.deps.Store.Summaries(ctx); err == nil && len(onboard.Pending(sums, res.Servers)) > 0 {
		q["server"] = res.Servers
		return c.Redirect(http.StatusSeeOther, "/launches/confirm?"+q.Encode())
	}
	return c.Redirect(http.StatusSeeOther, "/?"+q.Encode())
}

var importedFlash = regexp.MustCompile(`^(\d{1,5})\.(\d{1,5})\.(\d{1,5})$`)

// importedNotice is the flash after an import.
func importedNotice(q string) string {
	m := importedFlash.FindStringSubmatch(q)
	if m == nil {
		return ""
	}
	return fmt.Sprintf("Imported: %s added, %s updated, %s skipped. Imported servers are not verified: each waits for you to confirm its command.", m[1], m[2], m[3])
}

// importJSON is the API's import request.
type importJSON struct {
	Format string `json:"format"`
	Text   string `json:"text"`
	// Apply applies the plan; without it the answer is the dry run.
	Apply bool `json:"apply"`
	// Choices by entry name: add, update, new or skip.
	Choices map[string]string `json:"choices"`
}

// handleAPIImport serves POST /api/v1/import.
func (s *Server) handleAPIImport(c echo.Context) error {
	ctx := c.Request().Context()
	var body importJSON
	if err := decodeJSON(c, 3*maxImport, &body); err != nil {
		return err
	}
	plan, err := serverconfig.PlanImport(ctx, s.deps.Store, body.Format, []byte(body.Text))
	if err != nil {
		out := map[string]any{"error": err.Error()}
		var se *clientconfig.SyntaxError
		if errors.As(err, &se) {
			out["line"], out["column"] = se.Pos.Line, se.Pos.Col
		}
		return c.JSON(http.StatusUnprocessableEntity, out)
	}
	out := map[string]any{"format": plan.Format, "entries": plan.Rows, "warnings": plan.Warnings}
	if body.Apply {
		choices, err := serverconfig.ChoicesByName(plan, body.Choices)
		if err != nil {
			return &apiError{Status: http.StatusUnprocessableEntity, Message: err.Error(), Fields: map[string]string{"choices": err.Error()}}
		}
		out["result"] = serverconfig.ApplyImport(ctx, namingStore{s.deps.Store, byOf(ctx)}, plan, choices)
	}
	return c.JSON(http.StatusOK, out)
}

// handleExport serves GET /export?format=F&server=ID…: a download,
// without secret values (placeholders in their place).
func (s *Server) handleExport(c echo.Context) error {
	if c.QueryParam("format") == "" { // the page, not yet a download
		ctx := c.Request().Context()
		return render(c, http.StatusOK, views.ExportPage(s.page(c, "Export"), s.importView(ctx, "", "")))
	}
	return s.export(c, false)
}

// handleExportSecrets serves POST /export: the same download with secret
// values, after the person typed the API token again.
func (s *Server) handleExportSecrets(c echo.Context) error {
	if a, ok := s.tokenActor(c, c.FormValue("token"), "dashboard"); !ok || a.UserID != actorOf(c).UserID {
		if err := wrongToken(s.doors.tokenLimit, c); err != nil {
			return err
		}
		return &apiError{Status: http.StatusForbidden, Message: "exporting secret values needs your API token; it did not match"}
	}
	return s.export(c, true)
}

// handleAPIExport serves GET /api/v1/export?format=F&server=ID…&secrets=true.
func (s *Server) handleAPIExport(c echo.Context) error {
	return s.export(c, c.QueryParam("secrets") == "true")
}

func (s *Server) export(c echo.Context, withSecrets bool) error {
	ctx := c.Request().Context()
	format := c.FormValue("format")
	ids := c.QueryParams()["server"]
	sums, err := s.deps.Store.Summaries(ctx)
	if err != nil {
		return err
	}
	servers, missing := serverconfig.SelectServers(sums, ids)
	if len(missing) > 0 {
		return &apiError{Status: http.StatusNotFound, Message: "no server " + strings.Join(missing, ", ")}
	}
	data, err := serverconfig.ExportServers(format, servers, withSecrets)
	if err != nil {
		return &apiError{Status: http.StatusUnprocessableEntity, Message: err.Error(),
			Fields: map[string]string{"format": "must be one of " + strings.Join(clientconfig.Formats, ", ")}}
	}
	name := exportFileName(format)
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	ctype := "application/json"
	if format == clientconfig.Codex {
		ctype = "application/toml"
	}
	if !utf8.Valid(data) {
		return errors.New("export is not UTF-8")
	}
	return c.Blob(http.StatusOK, ctype+"; charset=utf-8", data)
}

func exportFileName(format string) string {
	switch format {
	case clientconfig.Codex:
		return "config.toml"
	case clientconfig.VSCode:
		return "mcp.json"
	case clientconfig.Cursor:
		return "mcp.json"
	}
	return "claude_desktop_config.json"
}
