package sandbox

// Seatbelt: the macOS wall.
//
// On macOS the launcher execs the server through
//
//	/usr/bin/sandbox-exec -p <profile> <program> <args…>
//
// sandbox-exec(1) has been marked deprecated in its man page since macOS
// 10.12 (Apple points to the App Sandbox instead), but it is still shipped
// with every macOS and it is what command-line tools that wall in child
// processes use: Anthropic's sandbox-runtime (src/sandbox/macos-sandbox-utils.ts)
// and OpenAI's codex (codex-rs/sandboxing/src/seatbelt.rs, which also
// insists on /usr/bin/sandbox-exec rather than one found on PATH); the
// profile language (SBPL, a Scheme) is the one Chromium's helpers are
// walled with (sandbox/policy/mac/common.sb). This file writes the profile
// from a Plan. It is pure Go, with no build tag, so that the profiles are
// checked by golden tests on any machine; nothing here can run them.
//
// What the profile relies on, and where it was learned:
//
//   - Precedence: for one operation, the last rule whose filters match
//     decides; (deny default) only answers when no rule matches. So the
//     profile is ordered from broad to narrow: read roots, then the
//     secrets' denials, then the person's grants again, then the Always
//     denials, then the run's own temp dir. Sources: sandbox-runtime's
//     generateReadRules ("In Seatbelt profiles, later rules take
//     precedence", and it emits allow file-read*, then deny, then
//     re-allow within the denied region); the executable test
//     matching-core/sandbox_utils/tests/nvram_test.c of
//     0xbf00/macos-sandbox-coverage, where (deny nvram*) followed by
//     (allow nvram-get (nvram-variable "ALS_Data")) allows ALS_Data and
//     denies the rest; empathic/clash PR #295 (Seatbelt "uses
//     last-match-wins semantics"). Codex avoids depending on the order by
//     writing exclusions inside one allow as
//     (require-all (subpath R) (require-not (subpath X))); the ordered
//     form is used here because the Always denials must also beat every
//     grant, which is simplest as one late deny.
//   - Several filters in one rule are alternatives (any may match):
//     Chromium writes (allow file-read-data (path "/dev/null") (path
//     "/dev/random") …). require-all / require-not combine filters with
//     and / not; they are not needed here.
//   - Filters: (subpath "/a") is /a and everything beneath it; (literal
//     "/a") is /a only; (prefix "/a/b") is every path whose text starts
//     with /a/b (Chromium: (prefix "/private/tmp/cvmsCodeSignObj")), which
//     is what an Always prefix needs, with no regular expression to escape;
//     (regex …) is not used.
//   - Paths are matched as the kernel resolved them: /tmp, /var and /etc
//     are links to /private/tmp, /private/var and /private/etc, so a rule
//     on /var/folders/… matches nothing (sandbox-runtime and codex
//     canonicalize paths, and sandbox-runtime writes both spellings of the
//     TMPDIR parent). Every path beneath those three is written here under
//     both spellings. Other links are the caller's to resolve.
//   - Strings are Scheme string literals: a backslash and a double quote
//     are escaped with a backslash. Control characters are refused (see
//     CheckSeatbeltPaths) rather than escaped.

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// seatbeltExecPath is the sandbox-exec the launcher runs: only the one in
// /usr/bin, never one found on PATH.
const seatbeltExecPath = "/usr/bin/sandbox-exec"

// seatbeltOff is the profile of a plan with the walls off: everything is
// allowed (the caller shows it as a warning).
const seatbeltOff = `; Switchboard: the walls are off for this server; everything is allowed.
(version 1)
(allow default)
`

// seatbeltRefused is the profile of a plan that CheckSeatbeltPaths
// refuses: nothing is allowed, not even exec, so the server does not
// start. The launcher checks first and reports the error; this only keeps
// a caller that did not from running an unwalled or mis-quoted profile.
const seatbeltRefused = `; Switchboard: this plan cannot be written as a profile (see CheckSeatbeltPaths); nothing is allowed.
(version 1)
(deny default)
`

// SeatbeltArgv returns the argv the launcher execs on macOS to start the
// server at path walled in by p: /usr/bin/sandbox-exec, -p, the profile,
// then path and argv[1:]. argv[0] is the name the server was called by;
// sandbox-exec takes the program's path instead (and passes it on as the
// program's argv[0]). A path starting with "-" (relative, which a
// resolved path is not) is written "./-…" so that sandbox-exec does not
// take it for an option.
//
// Call CheckSeatbeltPaths first: the profile of a plan it refuses allows
// nothing.
func SeatbeltArgv(p *Plan, path string, argv []string) []string {
	if strings.HasPrefix(path, "-") {
		path = "./" + path
	}
	out := make([]string, 0, 4+max(len(argv)-1, 0))
	out = append(out, seatbeltExecPath, "-p", SeatbeltProfile(p), path)
	if len(argv) > 1 {
		out = append(out, argv[1:]...)
	}
	return out
}

// CheckSeatbeltPaths reports whether p can be written as a Seatbelt
// profile: every path absolute, valid UTF-8 (macOS names are), without
// NUL or another control character (a newline could end a string or a
// comment of the profile; such paths are refused, not escaped); the
// network mode known, and the proxy port a port when the network is an
// allow-list. A plan with the walls off passes: its profile names no
// path.
func CheckSeatbeltPaths(p *Plan) error {
	if p == nil {
		return errors.New("seatbelt: no plan")
	}
	if p.Off {
		return nil
	}
	lists := []struct {
		field string
		paths []string
	}{
		{"read_roots", p.ReadRoots}, {"read", p.Read}, {"write", p.Write},
		{"secrets", p.Secrets}, {"always", p.Always}, {"always_prefixes", p.AlwaysPrefixes},
		{"devices", p.Devices},
	}
	for _, l := range lists {
		for _, s := range l.paths {
			if err := seatbeltCheckPath(l.field, s); err != nil {
				return err
			}
		}
	}
	if p.TempDir != "" {
		if err := seatbeltCheckPath("temp_dir", p.TempDir); err != nil {
			return err
		}
	}
	switch p.Network {
	case "", NetworkNone, NetworkAny:
	case NetworkAllow:
		if p.ProxyPort < 1 || p.ProxyPort > 65535 {
			return fmt.Errorf("seatbelt: network allow-list needs the proxy's port, not %d", p.ProxyPort)
		}
	default:
		return fmt.Errorf("seatbelt: %q is not a network mode (none, allow or any)", p.Network)
	}
	return nil
}

func seatbeltCheckPath(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("seatbelt: %s: path %q is not valid UTF-8", field, s)
	}
	for _, r := range s {
		if r == 0 || unicode.IsControl(r) {
			return fmt.Errorf("seatbelt: %s: path %q holds a control character", field, s)
		}
	}
	if !strings.HasPrefix(s, "/") {
		return fmt.Errorf("seatbelt: %s: path %q is not absolute", field, s)
	}
	return nil
}

// SeatbeltProfile returns the SBPL profile that walls in a server as p
// says. The same plan gives the same text (lists are sorted). A plan with
// the walls off gives (allow default); a plan CheckSeatbeltPaths refuses
// gives a profile that allows nothing.
func SeatbeltProfile(p *Plan) string {
	if p != nil && p.Off {
		return seatbeltOff
	}
	if err := CheckSeatbeltPaths(p); err != nil {
		return seatbeltRefused
	}
	var b seatbeltWriter
	b.line("; Switchboard: the walls of one stdio server (sandbox-exec -p).")
	b.line("; In SBPL the last rule that matches an operation decides it, so the")
	b.line("; order below matters: broad grants first, narrower denials after them.")
	b.line("(version 1)")
	b.line("(deny default)")
	seatbeltBase(&b)
	seatbeltFiles(&b, p)
	seatbeltNetwork(&b, p)
	return b.String()
}

// seatbeltBase writes what any process needs to start and run, and no
// more: no user preferences, no IOKit, no pasteboard, no window server,
// no network.
func seatbeltBase(b *seatbeltWriter) {
	b.blank()
	b.line(";; Base: what a process needs to start and run.")
	b.line("; Exec the server and what it runs (npx runs node); children inherit the profile.")
	b.line("(allow process-exec)")
	b.line("(allow process-fork)")
	b.line("; Signal and inspect itself and its own children only (kill, wait, proc_pidinfo).")
	b.line("(allow signal (target same-sandbox))")
	b.line("(allow process-info* (target same-sandbox))")
	b.line("; The machine's shape, read by every runtime at start (CPU count and features,")
	b.line("; page size, memory, OS version, own process); list after Chromium's common.sb")
	b.line("; as extended by codex and sandbox-runtime. net.routetable: getifaddrs(),")
	b.line("; Node's os.networkInterfaces().")
	b.rule("allow", "sysctl-read", seatbeltSysctls)
	b.line("; Misfiled as a write: Java passes a buffer to read the CPU type (codex).")
	b.line(`(allow sysctl-write (sysctl-name "kern.grade_cputype"))`)
	b.line("; host_info(), host_processor_info(): Node's os.cpus() (codex).")
	b.line("(allow mach-host*)")
	b.line("; User and group look-ups (getpwuid: home directory, user name) and logging.")
	b.rule("allow", "mach-lookup", []string{
		`(global-name "com.apple.logd")`,
		`(global-name "com.apple.system.logger")`,
		`(global-name "com.apple.system.opendirectoryd.libinfo")`,
	})
	b.line("; Named POSIX semaphores: Python's multiprocessing locks.")
	b.line("(allow ipc-posix-sem)")
	b.line("; stat() of any directory, so realpath() and getcwd() can walk to a granted")
	b.line("; path (names and contents stay denied); the denials below apply to it too.")
	b.line("(allow file-read-metadata (vnode-type DIRECTORY))")
	b.line("; The system's links to /private, for path resolution.")
	b.rule("allow", "file-read-metadata", []string{`(literal "/etc")`, `(literal "/tmp")`, `(literal "/var")`})
}

// seatbeltSysctls are the sysctl names the base reads (sorted, names then
// prefixes).
var seatbeltSysctls = []string{
	`(sysctl-name "hw.activecpu")`,
	`(sysctl-name "hw.busfrequency_compat")`,
	`(sysctl-name "hw.byteorder")`,
	`(sysctl-name "hw.cacheconfig")`,
	`(sysctl-name "hw.cachelinesize_compat")`,
	`(sysctl-name "hw.cpufamily")`,
	`(sysctl-name "hw.cpufrequency")`,
	`(sysctl-name "hw.cpufrequency_compat")`,
	`(sysctl-name "hw.cputype")`,
	`(sysctl-name "hw.l1dcachesize_compat")`,
	`(sysctl-name "hw.l1icachesize_compat")`,
	`(sysctl-name "hw.l2cachesize_compat")`,
	`(sysctl-name "hw.l3cachesize_compat")`,
	`(sysctl-name "hw.logicalcpu")`,
	`(sysctl-name "hw.logicalcpu_max")`,
	`(sysctl-name "hw.machine")`,
	`(sysctl-name "hw.memsize")`,
	`(sysctl-name "hw.model")`,
	`(sysctl-name "hw.ncpu")`,
	`(sysctl-name "hw.nperflevels")`,
	`(sysctl-name "hw.packages")`,
	`(sysctl-name "hw.pagesize")`,
	`(sysctl-name "hw.pagesize_compat")`,
	`(sysctl-name "hw.physicalcpu")`,
	`(sysctl-name "hw.physicalcpu_max")`,
	`(sysctl-name "hw.tbfrequency_compat")`,
	`(sysctl-name "hw.vectorunit")`,
	`(sysctl-name "kern.argmax")`,
	`(sysctl-name "kern.boottime")`,
	`(sysctl-name "kern.hostname")`,
	`(sysctl-name "kern.maxfilesperproc")`,
	`(sysctl-name "kern.maxproc")`,
	`(sysctl-name "kern.osproductversion")`,
	`(sysctl-name "kern.osrelease")`,
	`(sysctl-name "kern.ostype")`,
	`(sysctl-name "kern.osvariant_status")`,
	`(sysctl-name "kern.osversion")`,
	`(sysctl-name "kern.secure_kernel")`,
	`(sysctl-name "kern.usrstack64")`,
	`(sysctl-name "kern.version")`,
	`(sysctl-name "machdep.cpu.brand_string")`,
	`(sysctl-name "sysctl.proc_cputype")`,
	`(sysctl-name "vm.loadavg")`,
	`(sysctl-name-prefix "hw.optional.")`,
	`(sysctl-name-prefix "hw.perflevel")`,
	`(sysctl-name-prefix "kern.proc.pgrp.")`,
	`(sysctl-name-prefix "kern.proc.pid.")`,
	`(sysctl-name-prefix "net.routetable.")`,
}

// seatbeltFiles writes the file rules, in the order their precedence
// needs (the last match decides):
//
//  1. read beneath the read roots;
//  2. deny reading and writing the secrets beneath them or beneath a
//     grant (but a secret the person granted itself);
//  3. read again beneath Read, Write and the devices (a grant beneath a
//     secret wins over it);
//  4. write beneath Write and the devices;
//     4b. deny again the secrets strictly beneath a grant (granting ~ is no
//     grant of ~/.ssh), then allow again the grants beneath those;
//  5. deny reading and writing the Always paths and the entries matching
//     AlwaysPrefixes, whatever was granted, and deny unlinking (so
//     renaming) the directories above them, which would move them out
//     from under the denial;
//  6. read and write the run's own temp dir, last, for it may sit beneath
//     an always-denied prefix; and stat() the always-denied directories
//     above it, so that realpath() of it works.
func seatbeltFiles(b *seatbeltWriter, p *Plan) {
	roots := seatbeltClean(p.ReadRoots)
	grants := seatbeltClean(append(slices.Clone(p.Read), p.Write...))
	// secrets are denied; below are those a grant reopens (secrets
	// strictly beneath a grant), to be denied again after it.
	var secrets, below []string
	for _, s := range seatbeltClean(p.Secrets) {
		if slices.Contains(grants, s) || !seatbeltBeneathAny(s, roots) && !seatbeltBeneathAny(s, grants) {
			continue
		}
		secrets = append(secrets, s)
		if seatbeltBeneathAny(s, grants) {
			below = append(below, s)
		}
	}
	reads := seatbeltClean(append(slices.Clone(grants), p.Devices...))
	writes := seatbeltClean(append(slices.Clone(p.Write), p.Devices...))
	devices := seatbeltClean(p.Devices)
	always := seatbeltClean(p.Always)
	prefixes := seatbeltClean(p.AlwaysPrefixes)

	b.blank()
	b.line(";; Files.")
	b.line("; Read roots: read (and exec) everything beneath them but what is denied below.")
	b.rule("allow", "file-read*", seatbeltFilters("subpath", roots))
	if len(secrets) > 0 {
		b.line("; Secrets beneath the read roots: neither read nor written.")
		b.rule("deny", "file-read* file-write*", seatbeltFilters("subpath", secrets))
	}
	b.line("; What the person granted, and the devices: read, even beneath a secret.")
	b.rule("allow", "file-read*", seatbeltFilters("subpath", reads))
	if up := seatbeltDeniedAbove(grants, secrets, nil); len(up) > 0 {
		b.line("; stat() of the secret directories above a grant, for realpath().")
		b.rule("allow", "file-read-metadata", seatbeltFilters("literal", up))
	}
	b.line("; Writes: only what the person granted, and the devices.")
	b.rule("allow", "file-write*", seatbeltFilters("subpath", writes))
	b.rule("allow", "file-ioctl", seatbeltFilters("subpath", devices))
	if len(below) > 0 {
		b.line("; Secrets beneath a grant stay denied: granting a folder is no grant of")
		b.line("; the keys in it.")
		b.rule("deny", "file-read* file-write*", seatbeltFilters("subpath", below))
		var in, inWrite []string // grants beneath those secrets
		for _, g := range grants {
			if seatbeltBeneathAny(g, below) && !slices.Contains(below, g) {
				in = append(in, g)
				if slices.Contains(writes, g) {
					inWrite = append(inWrite, g)
				}
			}
		}
		if len(in) > 0 {
			b.line("; What the person granted beneath them.")
			b.rule("allow", "file-read*", seatbeltFilters("subpath", in))
			b.rule("allow", "file-write*", seatbeltFilters("subpath", inWrite))
		}
	}

	var above []string // the directories above each Always path
	for _, a := range always {
		above = append(above, seatbeltAncestors(a)...)
	}
	for _, pre := range prefixes {
		dir := path.Dir(pre)
		above = append(above, dir)
		above = append(above, seatbeltAncestors(dir)...)
	}
	above = seatbeltClean(above)
	if len(always)+len(prefixes) > 0 {
		b.line("; Always denied, whatever was granted: Switchboard's own files and the")
		b.line("; other runs' temp dirs.")
		denied := append(seatbeltFilters("subpath", always), seatbeltFilters("prefix", prefixes)...)
		b.rule("deny", "file-read* file-write*", denied)
		b.line("; Renaming a directory above them would move them out from under the denial.")
		b.rule("deny", "file-write-unlink", seatbeltFilters("literal", above))
	}

	if tmps := seatbeltClean([]string{p.TempDir}); len(tmps) > 0 {
		b.line("; The run's own temp dir, last: it may sit beneath an always-denied prefix.")
		b.rule("allow", "file-read* file-write*", seatbeltFilters("subpath", tmps))
		if up := seatbeltDeniedAbove(tmps, always, prefixes); len(up) > 0 {
			b.line("; stat() of the always-denied directories above it, for realpath().")
			b.rule("allow", "file-read-metadata", seatbeltFilters("literal", up))
		}
	}
}

// seatbeltNetwork writes the network rules: none (the default denies
// it), the egress proxy's port on loopback only, or everything.
func seatbeltNetwork(b *seatbeltWriter, p *Plan) {
	b.blank()
	switch p.Network {
	case NetworkAllow:
		b.line(";; Network: the egress proxy on loopback only; it enforces the host list.")
		b.line("; No other port (Switchboard's dashboard, the machine's services) is reachable,")
		b.line("; and no DNS: the proxy resolves names.")
		b.line(`(allow network-outbound (remote tcp "localhost:` + strconv.Itoa(p.ProxyPort) + `"))`)
	case NetworkAny:
		b.line(";; Network: the machine's network as it is, loopback included.")
		b.line("(allow network*)")
		b.line("(allow system-socket)")
		b.line("; DNS resolver configuration (getaddrinfo) and TLS certificate checks by the")
		b.line("; system (Go's crypto/x509 on macOS asks trustd).")
		b.rule("allow", "mach-lookup", []string{
			`(global-name "com.apple.SystemConfiguration.DNSConfiguration")`,
			`(global-name "com.apple.trustd.agent")`,
		})
	default:
		b.line(";; Network: none (denied by default).")
	}
}

// seatbeltWriter builds a profile line by line.
type seatbeltWriter struct{ strings.Builder }

func (b *seatbeltWriter) line(s string) {
	b.WriteString(s)
	b.WriteByte('\n')
}

func (b *seatbeltWriter) blank() { b.WriteByte('\n') }

// rule writes (action ops filter…), one filter a line. A rule without
// filters would apply to every path: it is not written at all.
func (b *seatbeltWriter) rule(action, ops string, filters []string) {
	if len(filters) == 0 {
		return
	}
	b.WriteString("(" + action + " " + ops)
	for _, f := range filters {
		b.WriteString("\n  " + f)
	}
	b.WriteString(")\n")
}

// seatbeltFilters returns (kind "path") for each path.
func seatbeltFilters(kind string, paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, s := range paths {
		out = append(out, "("+kind+" "+seatbeltQuote(s)+")")
	}
	return out
}

// seatbeltQuote returns s as an SBPL (Scheme) string literal. Control
// characters never get here (CheckSeatbeltPaths).
func seatbeltQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// seatbeltClean cleans the paths, adds the /private spelling of those
// beneath /tmp, /var and /etc, and sorts them without duplicates.
func seatbeltClean(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, s := range paths {
		if s == "" {
			continue
		}
		s = path.Clean(s)
		out = append(out, s)
		for _, l := range []string{"/tmp", "/var", "/etc"} {
			if s == l || strings.HasPrefix(s, l+"/") {
				out = append(out, "/private"+s)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// seatbeltBeneath reports whether p is dir or beneath it (what
// (subpath dir) matches).
func seatbeltBeneath(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func seatbeltBeneathAny(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return seatbeltBeneath(p, d) })
}

// seatbeltPrefixed reports whether a (prefix pre) filter matches p.
func seatbeltPrefixed(p string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(pre string) bool { return strings.HasPrefix(p, pre) })
}

// seatbeltDeniedAbove returns the directories above the paths that
// (subpath denied) or (prefix prefixes) match.
func seatbeltDeniedAbove(paths, denied, prefixes []string) []string {
	var up []string
	for _, p := range paths {
		for _, a := range seatbeltAncestors(p) {
			if seatbeltBeneathAny(a, denied) || seatbeltPrefixed(a, prefixes) {
				up = append(up, a)
			}
		}
	}
	return seatbeltClean(up)
}

// seatbeltAncestors returns the directories above p, up to but not
// including "/".
func seatbeltAncestors(p string) []string {
	var out []string
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		out = append(out, d)
	}
	return out
}
