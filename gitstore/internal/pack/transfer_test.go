package pack

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// TestInstallRefusesDamage: a received pack that is empty installs
// nothing; one that is not a pack, claims more objects than it can hold,
// or holds an entry whose header lies about its size is refused with a
// message saying so, and leaves nothing in the pack or transfer
// directories.
func TestInstallRefusesDamage(t *testing.T) {
	// A well-formed pack of one small stored blob, to damage.
	blob := []byte("a thought of twenty-six b\n")
	src := t.TempDir()
	name, err := Write(src, []Object{{ID: object.HashObject(object.TypeBlob, blob), Type: object.TypeBlob, Data: blob, Base: -1}})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(filepath.Join(src, "pack-"+name.String()+".pack"))
	resum := func(p []byte) []byte {
		sum := sha1.Sum(p[:len(p)-20])
		copy(p[len(p)-20:], sum[:])
		return p
	}
	huge := bytes.Clone(good[:32])
	binary.BigEndian.PutUint32(huge[8:], 1<<31)
	// The entry's size field says one byte less than it inflates to
	// (the header is type<<4 | size&15, continued: 26 = 0x1a).
	short := bytes.Clone(good)
	if short[12] != 0x80|3<<4|26&15 || short[13] != 26>>4 {
		t.Fatalf("unexpected entry header % x", short[12:14])
	}
	short[12]--
	short = resum(short)
	for _, c := range []struct {
		name string
		pack []byte
		want string
	}{
		{"not a pack", []byte(strings.Repeat("x", 40)), "no pack header"},
		{"huge count", huge, "claims 2147483648 objects"},
		{"short size", short, "damaged"},
		{"cut", good[:len(good)-25], "damaged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp, packDir := filepath.Join(t.TempDir(), "transfer"), t.TempDir()
			_, _, err := Install(tmp, packDir, bytes.NewReader(c.pack))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Install: %v, want an error with %q", err, c.want)
			}
			for _, d := range []string{tmp, packDir} {
				if left, _ := os.ReadDir(d); len(left) != 0 {
					t.Errorf("a refused pack left %d files in %s", len(left), d)
				}
			}
		})
	}
	tmp, packDir := filepath.Join(t.TempDir(), "transfer"), t.TempDir()
	if n, size, err := Install(tmp, packDir, bytes.NewReader(nil)); n != 0 || size != 0 || err != nil {
		t.Errorf("an empty pack: %d objects, %d bytes, %v; want nothing and no error", n, size, err)
	}
	if n, _, err := Install(tmp, packDir, bytes.NewReader(good)); n != 1 || err != nil {
		t.Fatalf("the undamaged pack: %d objects, %v", n, err)
	}
}

// TestCleanTransferDir removes only what a dead transfer left: temporary
// packs and indexes that nobody holds locked and that are old enough.
func TestCleanTransferDir(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * TransferLeftoverAge)
	write := func(name string, age time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, age, age)
		return p
	}
	deadPack := write("push-1.pack", old)
	deadIdx := write("fetch-2.idx", old)
	young := write("push-3.pack", time.Now())
	other := write("notes.txt", old)
	live := write("fetch-4.pack", old)
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := durable.Lock(context.Background(), f, nil, 0); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub.pack"), 0o755)
	CleanTransferDir(dir)
	for _, p := range []string{deadPack, deadIdx} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", filepath.Base(p), err)
		}
	}
	for _, p := range []string{young, other, live, filepath.Join(dir, "sub.pack")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	CleanTransferDir(filepath.Join(dir, "absent")) // nothing to clean is no error
}

// TestBaseCache: the cache keeps what fits in its budget, evicts the
// least recently used first (a get counts as a use), and does not keep an
// object larger than a quarter of it.
func TestBaseCache(t *testing.T) {
	pe := &Entry{name: "p"}
	c := newBaseCache(400)
	item := func(n int) []byte { return bytes.Repeat([]byte{byte(n)}, 100) }
	for off := int64(1); off <= 4; off++ {
		c.put(pe, off, object.TypeBlob, item(int(off)))
	}
	if _, _, ok := c.get(pe, 1); !ok { // 1 is now the most recent
		t.Fatal("a cached base is missing")
	}
	c.put(pe, 5, object.TypeTree, item(5)) // evicts 2, the least recent
	if _, _, ok := c.get(pe, 2); ok {
		t.Error("the least recently used base was kept")
	}
	for _, off := range []int64{1, 3, 4, 5} {
		typ, data, ok := c.get(pe, off)
		if !ok || !bytes.Equal(data, item(int(off))) {
			t.Errorf("base %d: ok %v", off, ok)
		}
		if off == 5 && typ != object.TypeTree {
			t.Errorf("base 5 has type %v", typ)
		}
	}
	if c.used != 400 {
		t.Errorf("used = %d, want 400", c.used)
	}
	c.put(pe, 6, object.TypeBlob, make([]byte, 101))
	if _, _, ok := c.get(pe, 6); ok {
		t.Error("a base over a quarter of the budget was kept")
	}
	c.put(pe, 3, object.TypeBlob, item(9)) // already there: unchanged
	if _, data, _ := c.get(pe, 3); !bytes.Equal(data, item(3)) {
		t.Error("a second put replaced a cached base")
	}
	if _, _, ok := c.get(&Entry{name: "q"}, 3); ok {
		t.Error("a base answered for another pack")
	}
}
