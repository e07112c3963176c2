package main

import "io/fs"

// onlyMine: a Windows file's access is its ACL, not read here; the user's
// profile folders are the user's by default.
func onlyMine(string, fs.FileInfo) error { return nil }
