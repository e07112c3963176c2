//go:build linux && arm64

package sandbox

// auditArch is AUDIT_ARCH_AARCH64; arm64 has no second ABI, so no system
// call number reaches x32Bit.
const (
	auditArch = 0xc00000b7
	x32Bit    = 0x40000000
)
