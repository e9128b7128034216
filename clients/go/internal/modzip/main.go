// Command modzip writes a module zip file (the format of the Go module
// proxy protocol) of a directory: modzip DIR MODULE@VERSION GOMOD OUT.
// Files under DIR go in as MODULE@VERSION/<path>, except directories with
// a go.mod of their own (other modules), vendor directories, VCS
// directories, symbolic links and DIR's go.mod, replaced by GOMOD.  It
// uses only the standard library, so it runs without any module:
// GO111MODULE=off go run modzip/main.go ...
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: modzip DIR MODULE@VERSION GOMOD OUT")
		os.Exit(2)
	}
	dir, prefix, gomod, out := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	f, err := os.Create(out)
	if err != nil {
		fail(err)
	}
	z := zip.NewWriter(f)
	add := func(name, src string) {
		w, err := z.Create(prefix + "/" + filepath.ToSlash(name))
		if err != nil {
			fail(err)
		}
		r, err := os.Open(src)
		if err != nil {
			fail(err)
		}
		if _, err := io.Copy(w, r); err != nil {
			fail(err)
		}
		r.Close()
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			if n := d.Name(); n == "vendor" || n == ".git" || n == ".hg" || n == ".svn" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || rel == "go.mod" {
			return nil
		}
		add(rel, path)
		return nil
	})
	if err != nil {
		fail(err)
	}
	add("go.mod", gomod)
	if err := z.Close(); err != nil {
		fail(err)
	}
	if err := f.Close(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "modzip:", err)
	os.Exit(1)
}
