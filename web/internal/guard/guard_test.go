package guard

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// serve runs req through the guards in front of a handler that answers
// 200, as the web server orders them.
func serve(req *http.Request) *httptest.ResponseRecorder {
	e := echo.New()
	e.Use(SecureHeaders, HostCheck([]string{"switchboard.example"}), RefuseCrossSite)
	ok := func(c echo.Context) error { return c.NoContent(http.StatusOK) }
	e.GET("/*", ok)
	e.POST("/*", ok)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func TestGuards(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		host    string
		headers map[string]string
		want    int
	}{
		{"loopback read", http.MethodGet, "127.0.0.1:7420", nil, http.StatusOK},
		{"localhost read", http.MethodGet, "LOCALHOST:7420", nil, http.StatusOK},
		{"IPv6 loopback", http.MethodGet, "[::1]:7420", nil, http.StatusOK},
		{"allowed extra host", http.MethodGet, "switchboard.example", nil, http.StatusOK},
		{"rebinding host", http.MethodGet, "evil.example:7420", nil, http.StatusForbidden},
		{"same-origin change", http.MethodPost, "127.0.0.1:7420", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{"cross-site change", http.MethodPost, "127.0.0.1:7420", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site change (another port)", http.MethodPost, "127.0.0.1:7420", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"foreign Origin change", http.MethodPost, "127.0.0.1:7420", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"own Origin change", http.MethodPost, "127.0.0.1:7420", map[string]string{"Origin": "http://127.0.0.1:7420"}, http.StatusOK},
		{"foreign fetch", http.MethodGet, "127.0.0.1:7420", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}, http.StatusForbidden},
		{"link from elsewhere", http.MethodGet, "127.0.0.1:7420", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/x", nil)
			req.Host = tt.host
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := serve(req)
			if rec.Code != tt.want {
				t.Errorf("status = %d; want %d", rec.Code, tt.want)
			}
			if rec.Header().Get("Content-Security-Policy") != contentSecurityPolicy || rec.Header().Get("X-Frame-Options") != "DENY" {
				t.Errorf("security headers missing: %v", rec.Header())
			}
		})
	}
}
