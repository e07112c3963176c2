package serverconfig

import (
	"net/url"
	"regexp"
	"strings"
)

// secretParam matches a URL query parameter's name that looks like it
// carries a secret (?api_key=, ?token=, ?access_token=, ?sig=…).
var secretParam = regexp.MustCompile(`(?i)(^|[_-])(key|apikey|token|secret|password|passwd|pwd|auth|authorization|sig|signature|credential|session)s?($|[_-])`)

// MaskURL is u as it is shown (API answers, pages, logs): the values of
// query parameters whose names look secret replaced by SecretMask, and
// a password in its userinfo too. Sending it back keeps the stored URL
// (see KeepMaskedURL). A URL that does not parse is shown as it is.
func MaskURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.RawQuery == "" && p.User == nil) {
		return u
	}
	if _, ok := p.User.Password(); ok {
		p.User = url.UserPassword(p.User.Username(), SecretMask)
	}
	if p.RawQuery != "" {
		parts := strings.Split(p.RawQuery, "&")
		for i, part := range parts {
			name, _, hasValue := strings.Cut(part, "=")
			if n, err := url.QueryUnescape(name); err == nil && hasValue && secretParam.MatchString(n) {
				parts[i] = name + "=" + SecretMask
			}
		}
		p.RawQuery = strings.Join(parts, "&")
	}
	return p.String()
}

// KeepMaskedURL returns old when submitted is old as MaskURL shows it
// (a form or a PUT sent the masked URL back unchanged), else submitted.
func KeepMaskedURL(submitted, old string) string {
	if old != "" && submitted == MaskURL(old) && submitted != old {
		return old
	}
	return submitted
}
