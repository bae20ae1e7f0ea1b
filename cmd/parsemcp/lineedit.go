package main

// What the interactive commands share about the terminal: the input
// history file.

import (
	"os"
	"path/filepath"
)

// privateFile makes path (and its directory) if missing, readable by its
// owner only, and takes group's and others' access away from an existing
// one: the history holds every question typed, which may quote the data.
func privateFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return f.Chmod(perm &^ 0o077)
	}
	return nil
}

func defaultHistoryFile() string {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		return ""
	}
	return filepath.Join(dir, "parsemcp", "chat_history")
}
