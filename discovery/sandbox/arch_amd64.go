//go:build linux && amd64

package sandbox

// auditArch is AUDIT_ARCH_X86_64; x32Bit marks the x32 ABI's system calls.
const (
	auditArch = 0xc000003e
	x32Bit    = 0x40000000
)
