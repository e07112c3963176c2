//go:build !linux

package main

// readKey: only Linux has keyrings.
func readKey(string) (bool, string) { return false, "no keyrings on this system" }
