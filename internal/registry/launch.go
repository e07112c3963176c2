package registry

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	v0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"

	"github.com/switchboard-dev/switchboard/store"
)

// Inputs are what a person gives for a registry server's launch: the
// values of its environment variables and headers (by name), and of its
// arguments and URL variables (positional arguments by their valueHint,
// named ones by their name, URL variables by theirs). A value whose
// server.json template names {variables} may be given whole, or by its
// variables as "NAME.variable".
type Inputs struct {
	Env       map[string]string
	Arguments map[string]string
	Headers   map[string]string
}

// Choice is which of a server.json's packages or remotes to run: the
// package of index Package, or (if Remote) the remote of that index.
type Choice struct {
	Index  int
	Remote bool
}

// Launch is a registry server's package or remote as a store.Server's
// launch, pinned to the version chosen.
type Launch struct {
	Transport string
	Command   string
	Args      []string
	Env       map[string]string
	URL       string
	Headers   map[string]string
	// Source names the registry entry and what of it runs.
	Source store.RegistrySource
}

// Kinds of package Switchboard runs, and the runner of each.
var runners = map[string]string{model.RegistryTypeNPM: "npx", model.RegistryTypePyPI: "uvx", model.RegistryTypeOCI: "docker"}

// Supported reports whether Switchboard can run a package of the type.
func Supported(registryType string) bool { _, ok := runners[registryType]; return ok }

// DefaultChoice is the first package Switchboard can run, else the first
// remote; ok false if there is neither.
func DefaultChoice(s v0.ServerJSON) (Choice, bool) {
	for i, p := range s.Packages {
		if Supported(p.RegistryType) && p.Transport.Type == model.TransportTypeStdio {
			return Choice{Index: i}, true
		}
	}
	if len(s.Remotes) > 0 {
		return Choice{Index: 0, Remote: true}, true
	}
	return Choice{}, false
}

// placeholder is a {variable} of a template.
var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_.-]+)\}`)

// LaunchOf maps the chosen package or remote of s (from registry) to a
// launch of exactly s's version: npm as npx -y id@version, pypi as uvx
// id==version, oci as docker run --rm -i with each environment variable
// passed in (-e NAME), a remote as its URL (its {variables} filled) with
// its headers. A required value not given, a choice that is not there or
// a package Switchboard cannot run is a field error (its key the field
// to fix: "env.NAME", "arguments.HINT", "headers.NAME", "package").
func LaunchOf(registry string, s v0.ServerJSON, c Choice, in Inputs) (Launch, map[string]string) {
	errs := map[string]string{}
	l := Launch{Env: map[string]string{}, Headers: map[string]string{},
		Source: store.RegistrySource{Registry: registry, Name: s.Name, Version: s.Version, Choice: c.Index}}
	if len(in.Arguments) > 0 {
		l.Source.Arguments = maps.Clone(in.Arguments)
		for _, f := range FieldsOf(s, c) { // a secret is not kept here (an update asks for it again)
			if name, ok := strings.CutPrefix(f.Key, "arguments."); ok && f.Secret {
				delete(l.Source.Arguments, name)
			}
		}
	}
	if c.Remote {
		if c.Index < 0 || c.Index >= len(s.Remotes) {
			errs["package"] = fmt.Sprintf("%s has no remote %d", s.Name, c.Index)
			return l, errs
		}
		r := s.Remotes[c.Index]
		switch r.Type {
		case model.TransportTypeStreamableHTTP:
			l.Transport = store.TransportHTTP
		case model.TransportTypeSSE:
			l.Transport = store.TransportSSE
		default:
			errs["package"] = fmt.Sprintf("a remote of transport %q is not one Switchboard reaches (streamable-http or sse)", r.Type)
			return l, errs
		}
		raw := fill(r.URL, func(name string) (string, bool) {
			v, ok := value(in.Arguments, name, r.Variables[name], "arguments."+name, errs)
			return escapeAll(v), ok
		})
		if u, err := url.Parse(raw); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			l.URL = raw
		} else if len(errs) == 0 {
			errs["package"] = fmt.Sprintf("the remote's URL %q is not an http(s) URL", raw)
		}
		for _, h := range r.Headers {
			if v, ok := keyValue(in.Headers, h, "headers."+h.Name, errs); ok {
				l.Headers[h.Name] = v
			}
		}
		l.Source.Kind, l.Source.Package = "remote", r.URL
		return l, errs
	}
	if c.Index < 0 || c.Index >= len(s.Packages) {
		errs["package"] = fmt.Sprintf("%s has no package %d", s.Name, c.Index)
		return l, errs
	}
	p := s.Packages[c.Index]
	runner, ok := runners[p.RegistryType]
	switch {
	case !ok:
		errs["package"] = fmt.Sprintf("a package of type %q is not one Switchboard runs yet (npm, pypi and oci are)", p.RegistryType)
		return l, errs
	case p.Transport.Type != model.TransportTypeStdio:
		errs["package"] = fmt.Sprintf("the package runs over %q; Switchboard runs stdio packages (add its remote instead)", p.Transport.Type)
		return l, errs
	case p.RegistryType != model.RegistryTypeOCI && (p.Version == "" || strings.ContainsAny(p.Version, "^~<>=*| ") || p.Version == "latest"):
		errs["package"] = fmt.Sprintf("the package's version %q is not one exact version", cut(p.Version, 100))
		return l, errs
	}
	if reason := badPackage(p); reason != "" {
		errs["package"] = reason
		return l, errs
	}
	for _, ev := range p.EnvironmentVariables {
		if !envName.MatchString(ev.Name) {
			errs["package"] = fmt.Sprintf("the environment variable name %q is not one", cut(ev.Name, 64))
			return l, errs
		}
		if v, ok := keyValue(in.Env, ev, "env."+ev.Name, errs); ok {
			l.Env[ev.Name] = v
		}
	}
	if reason := unsafeRuntimeArgs(p); reason != "" {
		errs["package"] = reason
		return l, errs
	}
	runtimeArgs := arguments(p.RuntimeArguments, in.Arguments, errs)
	packageArgs := arguments(p.PackageArguments, in.Arguments, errs)
	l.Transport, l.Command = store.TransportStdio, runner
	switch p.RegistryType {
	case model.RegistryTypeNPM:
		l.Args = append(append(append([]string{"-y"}, runtimeArgs...), p.Identifier+"@"+p.Version), packageArgs...)
		l.Source.Package = p.Identifier + "@" + p.Version
	case model.RegistryTypePyPI:
		l.Args = append(append(slices.Clone(runtimeArgs), p.Identifier+"=="+p.Version), packageArgs...)
		l.Source.Package = p.Identifier + "==" + p.Version
	case model.RegistryTypeOCI:
		l.Args = []string{"run", "--rm", "-i"}
		for _, name := range slices.Sorted(maps.Keys(l.Env)) {
			l.Args = append(l.Args, "-e", name) // passed in from docker's own environment
		}
		l.Args = append(append(append(l.Args, runtimeArgs...), p.Identifier), packageArgs...)
		l.Source.Package = p.Identifier
	}
	l.Source.Kind = p.RegistryType
	return l, errs
}

// arguments renders args: a positional one as its value, a named one as
// its name then its value (the name alone for a flag with no value).
func arguments(args []model.Argument, given map[string]string, errs map[string]string) []string {
	var out []string
	for _, a := range args {
		key := a.Name
		if a.Type == model.ArgumentTypePositional {
			key = a.ValueHint
			if key == "" {
				key = a.Name
			}
		}
		v, ok := valueWithVariables(given, key, a.InputWithVariables, "arguments."+key, errs)
		switch {
		case !ok:
		case a.Type == model.ArgumentTypeNamed && v == "":
			if a.IsRequired || a.Value != "" || a.Default != "" {
				out = append(out, a.Name)
			}
		case a.Type == model.ArgumentTypeNamed:
			out = append(out, a.Name, v)
		case v != "":
			out = append(out, v)
		}
	}
	return out
}

// keyValue is the value of an environment variable or header.
func keyValue(given map[string]string, kv model.KeyValueInput, field string, errs map[string]string) (string, bool) {
	return valueWithVariables(given, kv.Name, kv.InputWithVariables, field, errs)
}

// valueWithVariables is the value given for key, else its template
// filled from its variables (each given as key.variable, or defaulted),
// else its default; a required one missing is an error on field.
func valueWithVariables(given map[string]string, key string, in model.InputWithVariables, field string, errs map[string]string) (string, bool) {
	if v, ok := given[key]; ok && v != "" {
		return choose(v, in.Input, field, errs)
	}
	if in.Value != "" {
		ok := true
		v := fill(in.Value, func(name string) (string, bool) {
			got, found := value(given, key+"."+name, in.Variables[name], field+"."+name, errs)
			ok = ok && found
			return got, found
		})
		return v, ok
	}
	return value(given, key, in.Input, field, errs)
}

// value is the value given for key, else in's default; a required one
// missing is an error on field.
func value(given map[string]string, key string, in model.Input, field string, errs map[string]string) (string, bool) {
	if v, ok := given[key]; ok && v != "" {
		return choose(v, in, field, errs)
	}
	if in.Default != "" {
		return in.Default, true
	}
	if in.IsRequired {
		errs[field] = "Required."
		if in.Description != "" {
			errs[field] = "Required: " + cut(in.Description, 200)
		}
		return "", false
	}
	return "", true
}

// choose checks v against in's choices, if it has any.
func choose(v string, in model.Input, field string, errs map[string]string) (string, bool) {
	if len(in.Choices) > 0 && !slices.Contains(in.Choices, v) {
		errs[field] = fmt.Sprintf("Must be one of: %s", strings.Join(in.Choices, ", "))
		return "", false
	}
	return v, true
}

// fill replaces each {variable} of template with what get gives.
func fill(template string, get func(name string) (string, bool)) string {
	return placeholder.ReplaceAllStringFunc(template, func(m string) string {
		v, _ := get(m[1 : len(m)-1])
		return v
	})
}

// cut is s cut to n bytes at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Field is one value a launch asks of a person: its form field
// ("env.NAME", "arguments.HINT", "headers.NAME"), and what server.json
// says of it.
type Field struct {
	Key         string
	Label       string
	Description string
	Required    bool
	Secret      bool
	Default     string
	Choices     []string
}

// FieldsOf is what the chosen package or remote of s asks: its
// environment variables, arguments (those with no fixed value), headers
// and URL variables.
func FieldsOf(s v0.ServerJSON, c Choice) []Field {
	var out []Field
	add := func(prefix, name string, in model.Input) {
		out = append(out, Field{Key: prefix + name, Label: name, Description: cut(in.Description, 500), Required: in.IsRequired,
			Secret: in.IsSecret, Default: in.Default, Choices: in.Choices})
	}
	withVars := func(prefix, name string, in model.InputWithVariables) {
		if in.Value != "" && len(in.Variables) == 0 {
			return // fixed
		}
		if in.Value != "" {
			for _, v := range slices.Sorted(maps.Keys(in.Variables)) {
				add(prefix, name+"."+v, in.Variables[v])
			}
			return
		}
		add(prefix, name, in.Input)
	}
	if c.Remote {
		if c.Index < 0 || c.Index >= len(s.Remotes) {
			return nil
		}
		r := s.Remotes[c.Index]
		for _, v := range slices.Sorted(maps.Keys(r.Variables)) {
			add("arguments.", v, r.Variables[v])
		}
		for _, h := range r.Headers {
			withVars("headers.", h.Name, h.InputWithVariables)
		}
		return out
	}
	if c.Index < 0 || c.Index >= len(s.Packages) {
		return nil
	}
	p := s.Packages[c.Index]
	for _, e := range p.EnvironmentVariables {
		withVars("env.", e.Name, e.InputWithVariables)
	}
	for _, a := range append(slices.Clone(p.RuntimeArguments), p.PackageArguments...) {
		key := a.Name
		if a.Type == model.ArgumentTypePositional && a.ValueHint != "" {
			key = a.ValueHint
		}
		withVars("arguments.", key, a.InputWithVariables)
	}
	return out
}

// What a registry may name: a package's identifier and version never
// start with a dash (npx, uvx and docker would read an option), and hold
// only what their registries allow.
var (
	npmName      = regexp.MustCompile(`^(@[a-z0-9~][a-z0-9._~-]*/)?[a-z0-9~][a-z0-9._~-]*$`)
	pypiName     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	ociRef       = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?(@sha256:[a-f0-9]{64})?$`)
	exactVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]*$`)
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// semverPattern is one exact npm version.
	semverPattern = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
)

// badPackage says why a package's identifier or version is not one its
// runner may be given, "" if they are.
func badPackage(p model.Package) string {
	switch p.RegistryType {
	case model.RegistryTypeNPM:
		if !npmName.MatchString(p.Identifier) || len(p.Identifier) > 214 {
			return fmt.Sprintf("%q is not an npm package name", cut(p.Identifier, 100))
		}
	case model.RegistryTypePyPI:
		if !pypiName.MatchString(p.Identifier) || len(p.Identifier) > 200 {
			return fmt.Sprintf("%q is not a PyPI project name", cut(p.Identifier, 100))
		}
	case model.RegistryTypeOCI:
		if !ociRef.MatchString(p.Identifier) || len(p.Identifier) > 512 {
			return fmt.Sprintf("%q is not an image reference", cut(p.Identifier, 100))
		}
		// Pinned: by digest, or by a tag (the registry's version, when it
		// gives one); never the floating latest.
		if strings.Contains(p.Identifier, "@sha256:") {
			return ""
		}
		_, tag, tagged := strings.Cut(p.Identifier[strings.LastIndex(p.Identifier, "/")+1:], ":")
		if !tagged || tag == "latest" || p.Version != "" && tag != p.Version {
			return fmt.Sprintf("the image %q is not pinned to the version %q (a tag of it, or a digest)", cut(p.Identifier, 100), p.Version)
		}
		return ""
	}
	if p.RegistryType == model.RegistryTypeNPM && !semverPattern.MatchString(p.Version) {
		return fmt.Sprintf("the version %q is not one exact version (npm reads it as a range or a tag)", cut(p.Version, 100))
	}
	if !exactVersion.MatchString(p.Version) || slices.ContainsFunc(strings.Split(p.Version, "."), func(seg string) bool { return seg == "x" || seg == "X" }) {
		return fmt.Sprintf("the version %q is not one exact version", cut(p.Version, 100))
	}
	return ""
}

// dockerAllowed are the docker run options a registry's runtime
// arguments may ask for, each as --name value or --name=value: the
// container's own environment, an init process, a read-only root.
// Anything else (a volume, a device, the host's network, privileges, an
// option of the runner that runs another package) is refused, and npx
// and uvx take none: their options choose what runs.
var dockerAllowed = []string{"-e", "--env", "--init", "--read-only"}

// unsafeRuntimeArgs says why the package's runtime arguments may not be
// given to its runner, "" if they may.
func unsafeRuntimeArgs(p model.Package) string {
	if len(p.RuntimeArguments) == 0 {
		return ""
	}
	if p.RegistryType != model.RegistryTypeOCI {
		return fmt.Sprintf("the registry gives %s arguments of its own (%s…), which could make it run something else: refused",
			runners[p.RegistryType], cut(p.RuntimeArguments[0].Name+p.RuntimeArguments[0].Value, 40))
	}
	for _, a := range p.RuntimeArguments {
		name, _, _ := strings.Cut(a.Name, "=")
		if a.Type != model.ArgumentTypeNamed || !slices.Contains(dockerAllowed, name) {
			return fmt.Sprintf("the registry asks docker run for %q, which Switchboard does not give a container (it allows %s): refused",
				cut(a.Name+" "+a.Value, 60), strings.Join(dockerAllowed, ", "))
		}
		if (name == "-e" || name == "--env") && !envName.MatchString(strings.SplitN(a.Value, "=", 2)[0]) && a.Value != "" {
			return fmt.Sprintf("the registry asks docker run for the environment %q: refused", cut(a.Value, 60))
		}
	}
	return ""
}

// escapeAll percent-encodes everything of v but the unreserved
// characters, so that a URL variable's value stays within its part of
// the URL (it cannot add a user, a port, a path or a host).
func escapeAll(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
