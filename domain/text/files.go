package text

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// Files is read access to where tokenizer files live: the local filesystem (OSFiles) or the
// unpacked GetTokenizer bundle (MapFiles).
type Files interface {
	// ReadFile returns the file's bytes; a missing file is an error wrapping fs.ErrNotExist.
	ReadFile(name string) ([]byte, error)
	// IsDir reports whether name is a directory; a missing name is fs.ErrNotExist.
	IsDir(name string) (bool, error)
	// List returns the names of the regular files directly in dir, sorted.
	List(dir string) ([]string, error)
	// Join joins path elements the way the implementation names files.
	Join(elem ...string) string
}

// OSFiles reads the local filesystem.
type OSFiles struct{}

// ReadFile implements Files.
func (OSFiles) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// IsDir implements Files.
func (OSFiles) IsDir(name string) (bool, error) {
	st, err := os.Stat(name)
	if err != nil {
		return false, err
	}
	return st.IsDir(), nil
}

// List implements Files.
func (OSFiles) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Join implements Files.
func (OSFiles) Join(elem ...string) string { return filepath.Join(elem...) }

// MapFiles is an in-memory flat directory "." (a checked bundle from OpenBundle).
type MapFiles map[string][]byte

// ReadFile implements Files.
func (m MapFiles) ReadFile(name string) ([]byte, error) {
	if b, ok := m[path.Clean(name)]; ok {
		return b, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// IsDir implements Files: "." is the only directory.
func (m MapFiles) IsDir(name string) (bool, error) {
	name = path.Clean(name)
	if name == "." {
		return true, nil
	}
	if _, ok := m[name]; ok {
		return false, nil
	}
	return false, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// List implements Files.
func (m MapFiles) List(dir string) ([]string, error) {
	if path.Clean(dir) != "." {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	names := make([]string, 0, len(m))
	for n := range m {
		if !containsSlash(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Join implements Files.
func (MapFiles) Join(elem ...string) string { return path.Join(elem...) }

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
