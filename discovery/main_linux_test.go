package discovery

import (
	"os"
	"strconv"
	"strings"
)

// procState returns the state letter of pid from /proc ("" if gone).
func procState(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// children returns the live child processes of this test process.
func children() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if f := strings.Fields(s[i+1:]); len(f) >= 2 && f[1] == self && f[0] != "Z" {
			pid, _ := strconv.Atoi(e.Name())
			out = append(out, pid)
		}
	}
	return out
}
