//go:build windows

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The Windows wall. A server runs in a Job Object of its own (see the
// discovery package) and with a restricted, low-integrity token: it may
// write only where low integrity may, which, among the user's files, is
// where Switchboard labels Low for the run (LowWritePaths: its temp dir,
// its working directory, the paths its profile grants for writing).
// Everything else the user owns carries no label, which Windows reads as
// Medium, and the default policy of a label, no-write-up, keeps a Low
// process from writing, deleting or renaming it whatever its DACL
// grants. The same holds for the user's registry keys (but
// HKCU\Software\AppDataLow) and for the user's other processes: a Low
// process cannot write to them, inject into them, or send window messages
// to their windows.
//
// What this does NOT confine (say so wherever the tier is shown):
//
//   - Reads. The mandatory label of a file is no-write-up only: Windows
//     sets no-read-up on processes, not on files. So a Low process
//     reads (and runs) whatever the user can read: the user's home,
//     documents, SSH keys, cloud credentials, browser profiles,
//     Switchboard's own database and token files, other servers' temp
//     dirs. Profile entries that deny reading (Deny, DefaultSecrets,
//     Read lists, a strict Files setting) are not enforced on Windows.
//   - The network. There is no network wall on Windows: the server
//     connects anywhere, and listens, as the user can, Switchboard's own
//     ports on loopback included. A profile's Network "none" or its
//     allow-list is not enforced (the egress proxy is used only by a
//     server that honours HTTP(S)_PROXY).
//   - What is labelled Low. Anything already labelled Low
//     (%USERPROFILE%\AppData\LocalLow) is writable too. The labels
//     Switchboard sets stay after the run: a working directory or a
//     Write path, once labelled, is writable by every low-integrity
//     process of the user, now and later, not only by this server.
//
// Every walled profile asks for read walls (its secrets, Switchboard's
// own files), so on Windows a walled server starts only when its profile
// is Weaker, and the walls it lacks are listed (lowIntegrityMissing):
// the tier job+low-integrity never stands for more than it is.
//
// A read wall would need an AppContainer (a lowbox token, whose package
// SID the DACL of every readable path must grant; without the network
// capabilities it is also a network wall) or a restricting SID of the
// run's own that the DACLs of the readable paths grant. Both mean
// editing the DACLs of the user's files; neither is built.

// advapi32 has CreateRestrictedToken; golang.org/x/sys/windows does not
// wrap it.
var procCreateRestrictedToken = windows.NewLazySystemDLL("advapi32.dll").NewProc("CreateRestrictedToken")

// disableMaxPrivilege is CreateRestrictedToken's DISABLE_MAX_PRIVILEGE:
// every privilege but SeChangeNotifyPrivilege is deleted.
const disableMaxPrivilege = 0x1

// tokenAccess is what the new token's handle may do (CreateRestrictedToken
// gives the new handle the access of the one it is given): what
// CreateProcessAsUser needs (query, duplicate, assign primary), and
// adjust default, to set the integrity level.
const tokenAccess = windows.TOKEN_QUERY | windows.TOKEN_DUPLICATE | windows.TOKEN_ASSIGN_PRIMARY | windows.TOKEN_ADJUST_DEFAULT

// LowIntegrityToken returns a new primary token for the server: a
// restricted copy of this process's token, at integrity level Low
// (S-1-16-4096). The caller closes it.
//
// It is made from this process's own token by CreateRestrictedToken,
// which returns a new primary token (a duplicate; a change to it does
// not touch this process): a restricted version of the caller's own
// token, which CreateProcessAsUser (exec.Cmd with SysProcAttr.Token)
// assigns to a child without SeAssignPrimaryTokenPrivilege. So the
// process that starts the server must be the one that made the token
// (the launcher, inside the job); a token made elsewhere, or duplicated
// before it was restricted, is not assignable by an ordinary user.
//
// The restrictions, in the terms of Chromium's token levels
// (sandbox/win/src/security_level.h):
//
//   - Privileges: DISABLE_MAX_PRIVILEGE deletes all but
//     SeChangeNotifyPrivilege (traverse), as every Chromium level but
//     USER_LOCKDOWN does: shutdown, undock, time zone, working set and,
//     for an elevated Switchboard, debug, backup, restore, take
//     ownership, load driver and the rest are gone, not just disabled.
//   - Deny-only SIDs: BUILTIN\Administrators and BUILTIN\Power Users
//     (when the token has them: an elevated Switchboard) only deny
//     access, never grant it, as in PostgreSQL's restricted pg_ctl and
//     Chromium's non-admin levels. A non-elevated token already has
//     Administrators deny-only.
//   - Restricting SIDs: none. A restricting SID list makes every access
//     check run twice, once more with only those SIDs, and grants what
//     both grant. Chromium's USER_LOCKDOWN (the NULL SID) and
//     USER_RESTRICTED (RESTRICTED) open nearly nothing: its renderers
//     live on a broker that opens files for them, which a node or
//     python server has not. USER_LIMITED (Users, Everyone, RESTRICTED,
//     the logon SID) cannot open the user's own files, whose DACLs
//     grant the user's SID and not those groups: the server could not
//     load its code from %APPDATA%\npm, the npm or uv cache or
//     %LOCALAPPDATA%\Programs\Python, nor use its working directory or
//     its temp dir (both in the user's profile). The levels that add the
//     user's SID (USER_INTERACTIVE, USER_RESTRICTED_NON_ADMIN) pass
//     wherever the user passes, so they take away only what other
//     groups grant (domain groups, CONSOLE LOGON, LOCAL), which is no
//     secret of the user's and fails runtimes in ways hard to explain.
//     So this is Chromium's USER_NON_ADMIN shape (no restricting SIDs,
//     admin SIDs deny-only, traverse only) and the write wall is the
//     integrity level, not the SID lists.
//   - Integrity: Low, set with SetTokenInformation(TokenIntegrityLevel)
//     before the process starts (Chromium's INTEGRITY_LEVEL_LOW; the
//     level of Internet Explorer's protected mode). Objects the server
//     creates get the Low label; its children inherit the token, and
//     cannot run higher than Low (the token's policy is
//     no-write-up and new-process-min).
//
// The caller must give exec.Cmd an explicit Env: with a Token and a nil
// Env, os/exec starts the child with the user's default environment
// (CreateEnvironmentBlock), not with the one Switchboard chose.
func LowIntegrityToken() (windows.Token, error) {
	var self windows.Token
	if err := windows.OpenProcessToken(windows.CurrentProcess(), tokenAccess, &self); err != nil {
		return 0, fmt.Errorf("open this process's token: %w", err)
	}
	defer self.Close()

	var deny []windows.SIDAndAttributes
	for _, known := range []windows.WELL_KNOWN_SID_TYPE{windows.WinBuiltinAdministratorsSid, windows.WinBuiltinPowerUsersSid} {
		sid, err := windows.CreateWellKnownSid(known)
		if err != nil {
			return 0, fmt.Errorf("well-known SID %d: %w", known, err)
		}
		// CreateRestrictedToken ignores the attributes, and SIDs the token
		// does not have.
		deny = append(deny, windows.SIDAndAttributes{Sid: sid})
	}
	var token windows.Token
	r, _, e := procCreateRestrictedToken.Call(
		uintptr(self),
		disableMaxPrivilege,
		uintptr(len(deny)), uintptr(unsafe.Pointer(&deny[0])),
		0, 0, // privileges to delete: all, by the flag
		0, 0, // restricting SIDs: none (see above)
		uintptr(unsafe.Pointer(&token)),
	)
	runtime.KeepAlive(deny)
	if r == 0 {
		return 0, fmt.Errorf("create a restricted token: %w", e)
	}
	if err := setLowIntegrity(token); err != nil {
		token.Close()
		return 0, err
	}
	return token, nil
}

// setLowIntegrity sets token's integrity level to Low.
func setLowIntegrity(token windows.Token) error {
	low, err := windows.CreateWellKnownSid(windows.WinLowLabelSid)
	if err != nil {
		return fmt.Errorf("the Low label's SID: %w", err)
	}
	label := windows.Tokenmandatorylabel{
		Label: windows.SIDAndAttributes{Sid: low, Attributes: windows.SE_GROUP_INTEGRITY},
	}
	err = windows.SetTokenInformation(token, windows.TokenIntegrityLevel, (*byte)(unsafe.Pointer(&label)), label.Size())
	runtime.KeepAlive(low)
	if err != nil {
		return fmt.Errorf("set the token's integrity level to Low: %w", err)
	}
	return nil
}

// LabelLow sets the mandatory label Low, no-write-up, on path (see
// lowLabelSDDL): a low-integrity process may then write there as far as
// the DACL lets the user. A directory's label is inherited by what is
// made beneath it, and SetNamedSecurityInfo passes it on at once to
// what is already there (so the server may change existing files too):
// on a large tree this takes a while, every run. The label stays after
// the run. Setting a label needs WRITE_OWNER on path, which its owner
// normally has; it may not be higher than this process's level, and Low
// never is.
func LabelLow(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("label %s Low: %w", path, err)
	}
	sddl := lowLabelSDDL
	if !fi.IsDir() {
		sddl = lowLabelFileSDDL
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return fmt.Errorf("label %s Low: %s: %w", path, sddl, err)
	}
	sacl, _, err := sd.SACL()
	if err != nil {
		return fmt.Errorf("label %s Low: %s: %w", path, sddl, err)
	}
	if err := windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.LABEL_SECURITY_INFORMATION, nil, nil, nil, sacl); err != nil {
		return fmt.Errorf("label %s Low: %w", path, err)
	}
	runtime.KeepAlive(sd)
	return nil
}

// PrepareWindows builds the Windows wall of a run in the process that
// starts the server inside its job (the launcher), and returns the tier
// it built and the token to start the server with. For a plan with the
// walls off it builds nothing and returns Tier{Off: true} and no token
// (0): the server starts with the caller's own token.
//
// Otherwise the tier is job+low-integrity (the job is the caller's). A
// plan asking for walls that tier lacks (lowIntegrityMissing: reads
// always, the network unless it is "any") is an error saying which,
// unless it is Weaker, as on Linux (Enforce): never silently weaker. It
// is checked first, so a refused run labels nothing. Then every path of
// LowWritePaths(p) is labelled Low (the temp dir must exist by then) and
// the token is LowIntegrityToken(). The caller sets cmd.SysProcAttr.Token
// to it and an explicit cmd.Env (see LowIntegrityToken), starts the
// server, and closes the token once it has started.
//
// A path that cannot be labelled is an error naming it (all of them, not
// only the first), Weaker or not, and no token is returned: the server
// would be unable to write where its profile lets it, which is no wall
// lower and so no choice of the person's, but a failure to show.
//
// It does not confine reads or the network: see the top of this file.
func PrepareWindows(p *Plan) (Tier, windows.Token, error) {
	if p.Off {
		return Tier{Off: true}, 0, nil
	}
	t := Tier{LowIntegrity: true}
	if missing := t.Missing(p); len(missing) > 0 && !p.Weaker {
		return t, 0, &WeakerError{Tier: t, Missing: missing}
	}
	var errs []error
	for _, path := range LowWritePaths(p) {
		if err := LabelLow(path); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return t, 0, err
	}
	token, err := LowIntegrityToken()
	if err != nil {
		return t, 0, err
	}
	return t, token, nil
}
