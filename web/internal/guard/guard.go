// Package guard holds the web server's guards that need no session:
// security headers on every answer, the Host allow-list (the defence
// against DNS rebinding), and the refusal of what a browser sends on
// behalf of another site.
package guard

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// contentSecurityPolicy allows only our own scripts, styles and
// connections, and no framing. data: URLs are allowed for images and
// media alone, for the images and sounds of a Try it result, which the
// server builds only from allowed types (never SVG) and checked base64
// (see web/tryit).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"media-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// SecureHeaders sets the security headers on every response.
func SecureHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if !strings.HasPrefix(c.Request().URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		return next(c)
	}
}

// HostCheck refuses any Host header that is not loopback or explicitly
// allowed: the defence against DNS rebinding.
func HostCheck(extra []string) echo.MiddlewareFunc {
	allowed := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	for _, h := range extra {
		allowed[strings.ToLower(h)] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			host := c.Request().Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			host = strings.Trim(strings.ToLower(host), "[]")
			if !allowed[host] {
				return echo.NewHTTPError(http.StatusForbidden, "this host name is not allowed; open Switchboard via 127.0.0.1 or localhost")
			}
			return next(c)
		}
	}
}

// RefuseCrossSite refuses, on every route, what a browser sends on behalf
// of another site. A state change must come from this origin (see
// sameOrigin). A read may come from elsewhere only as a top-level
// navigation (a link or bookmark to the dashboard, which carries no
// session cookie: it is SameSite=Strict); a foreign page's fetch, image,
// script or EventSource is refused by its Fetch Metadata (another port on
// localhost is "same-site", and refused too) or its Origin.
func RefuseCrossSite(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !SafeMethod(r.Method) {
			if err := sameOrigin(r); err != nil {
				return err
			}
			return next(c)
		}
		if r.Header.Get("Sec-Fetch-Mode") == "navigate" {
			return next(c)
		}
		switch r.Header.Get("Sec-Fetch-Site") {
		case "cross-site", "same-site":
			return echo.NewHTTPError(http.StatusForbidden, "cross-site request refused")
		}
		if o := r.Header.Get("Origin"); o != "" && o != "null" && !originIsHost(o, r.Host) {
			return echo.NewHTTPError(http.StatusForbidden, "cross-origin request refused")
		}
		return next(c)
	}
}

// SafeMethod reports whether m changes nothing: GET, HEAD, OPTIONS.
func SafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// originIsHost reports whether an Origin header names the host (and
// port) the request was sent to.
func originIsHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}

// sameOrigin refuses requests a browser marks as cross-site. Browsers
// that send Sec-Fetch-Site are trusted on it (with Referrer-Policy
// no-referrer they send "Origin: null" even for same-origin forms);
// otherwise an Origin header must name this host.
func sameOrigin(r *http.Request) error {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return nil
	case "":
	default:
		return echo.NewHTTPError(http.StatusForbidden, "cross-site request refused")
	}
	if o := r.Header.Get("Origin"); o != "" && !originIsHost(o, r.Host) {
		return echo.NewHTTPError(http.StatusForbidden, "cross-origin request refused")
	}
	return nil
}
