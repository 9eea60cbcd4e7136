package durable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout is how long a writer waits for a lock another process
// holds before it gives up and names the holder.
const DefaultTimeout = 10 * time.Second

// ErrHeld is what a lock that stayed taken for the whole wait matches
// (errors.Is); the error itself is a *HeldError.
var ErrHeld = errors.New("held by another process")

// Holder is what a lock's holder wrote about itself when it took it.
type Holder struct {
	PID     int
	Command string
	Since   time.Time
}

// HeldError says which lock a caller gave up on, after how long, and who
// holds it, when the holder left a record and is still running.
type HeldError struct {
	Lock   string
	Waited time.Duration
	Holder *Holder // nil when unknown
}

func (e *HeldError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lock %s is held by another process", e.Lock)
	if h := e.Holder; h != nil {
		fmt.Fprintf(&b, " (pid %d, %q, since %s)", h.PID, h.Command, h.Since.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "; gave up after waiting %s (THOUGHTBOX_LOCK_TIMEOUT sets the wait)", e.Waited.Round(time.Millisecond))
	return b.String()
}

func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// A Record is the file in which a lock's holder says who it is, so that a
// process that gives up waiting can name it. It may be the lock file
// itself (locks cover no content: see lock_windows.go) or a file next to
// it. Writing it costs one positioned write, with no sync: it is a hint
// for people, never trusted for correctness, and a record whose pid is
// no longer running is ignored.
type Record struct {
	path string
	mu   sync.Mutex
	f    *os.File
	own  bool // f was opened here and is closed by Close
	// last is what this Record wrote at its last mark, and seen a buffer
	// to read the file back into: a lock taken turn after turn (the log's,
	// once per thought) finds its own record still there when nobody else
	// took the lock meanwhile, and is spared the write, as Mutex is.
	last, seen []byte
}

// NewRecord returns the record kept at path, which is created on first use.
func NewRecord(path string) *Record { return &Record{path: path, own: true} }

// RecordIn returns a record written into f, the open lock file itself.
func RecordIn(f *os.File) *Record { return &Record{path: f.Name(), f: f} }

// Path is where the record is kept.
func (r *Record) Path() string { return r.path }

// Close closes the record's file if it opened one.
func (r *Record) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = nil
	if r.own && r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}

// recordSize is the fixed size of a record, padded with spaces, so that a
// shorter record overwrites a longer one without a truncate.
const recordSize = 512

var (
	selfOnce sync.Once
	selfCmd  string
	pid      int
)

// selfPid is os.Getpid, which is a system call each time.
func selfPid() int {
	command()
	return pid
}

func command() string {
	selfOnce.Do(func() {
		pid = os.Getpid()
		var b strings.Builder
		for i, a := range os.Args {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(a)
		}
		s := strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return ' '
			}
			return r
		}, b.String())
		if len(s) > 300 {
			s = s[:300] + "..."
		}
		selfCmd = s
	})
	return selfCmd
}

// mark writes this process into the record, best effort, unless the
// record this Record wrote last is still there: then nobody else took the
// lock since, and the record already names this process, since its run of
// turns began. Reading it back costs a read instead of a write, which
// would also dirty the file's page and inode every turn.
func (r *Record) mark() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		f, err := openFile(r.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return
		}
		r.f = f
	}
	if r.last != nil {
		if r.seen == nil {
			r.seen = make([]byte, recordSize)
		}
		if n, _ := r.f.ReadAt(r.seen, 0); n == recordSize && bytes.Equal(r.seen, r.last) {
			return
		}
	}
	r.last = markFile(r.f, r.last)
}

// markFile writes this process's record into f, in buf (reused when
// large enough), and returns it.
func markFile(f *os.File, buf []byte) []byte {
	if cap(buf) < recordSize {
		buf = make([]byte, 0, recordSize)
	}
	buf = append(buf[:0], "pid "...)
	buf = strconv.AppendInt(buf, int64(selfPid()), 10)
	buf = append(buf, "\nsince "...)
	buf = time.Now().UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, "\ncommand "...)
	buf = append(buf, command()...)
	buf = append(buf, '\n')
	if len(buf) > recordSize {
		buf = buf[:recordSize]
	}
	for len(buf) < recordSize {
		buf = append(buf, ' ')
	}
	f.WriteAt(buf, 0)
	return buf
}

// ReadHolder reads the record at path. ok is false when there is none,
// it does not parse, or the process it names is no longer running (a
// stale record from a holder that died, whose lock the OS released).
func ReadHolder(path string) (h Holder, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return h, false
	}
	if len(data) > recordSize {
		data = data[:recordSize]
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "pid":
			h.PID, _ = strconv.Atoi(val)
		case "since":
			h.Since, _ = time.Parse(time.RFC3339Nano, val)
		case "command":
			h.Command = strings.TrimRight(val, " ")
		}
	}
	if h.PID <= 0 || h.Since.IsZero() || !alive(h.PID) {
		return Holder{}, false
	}
	return h, true
}

// TryLock takes the exclusive lock on f if no other open file holds it,
// without waiting, and then writes rec (which may be nil).
func TryLock(f *os.File, rec *Record) (bool, error) {
	ok, err := tryLock(f)
	if ok {
		rec.mark()
	}
	return ok, err
}

// Lock takes the exclusive lock on f, waiting at most timeout (none if it
// is not positive) while another open file holds it; then it writes rec,
// which may be nil. A wait that runs out returns a *HeldError naming the
// holder found in rec's file.
//
// The wait polls, backing off from 50µs to 2ms: a blocking lock call
// cannot be abandoned when the time is up or ctx is done.
func Lock(ctx context.Context, f *os.File, rec *Record, timeout time.Duration) error {
	ok, err := tryLock(f)
	if err != nil || ok {
		if ok {
			rec.mark()
		}
		return err
	}
	start := time.Now()
	pause := 50 * time.Microsecond
	var t *time.Timer
	for {
		if time.Since(start) >= timeout {
			return heldError(f.Name(), rec, time.Since(start))
		}
		if t == nil {
			t = time.NewTimer(pause)
			defer t.Stop()
		} else {
			t.Reset(pause)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 2*time.Millisecond)
		if ok, err := tryLock(f); err != nil || ok {
			if ok {
				rec.mark()
			}
			return err
		}
	}
}

func heldError(name string, rec *Record, waited time.Duration) error {
	e := &HeldError{Lock: name, Waited: waited}
	if rec != nil {
		if h, ok := ReadHolder(rec.path); ok {
			e.Holder = &h
		}
	}
	return e
}

// Unlock releases the lock on f.
func Unlock(f *os.File) error { return unlock(f) }

// A Mutex is an inter-process lock on a file that is fair between
// processes: of two processes taking it in turn, neither can take it
// twice while the other waits. A lone lock file does not promise that —
// a process that releases it and at once asks again often wins before
// the waiting process notices — so a second file, the gate, is taken
// before the lock and let go once the lock is held: the holder, coming
// back, must pass the gate, which the waiter is then holding.
//
// Its two files stay open between turns (a writer takes a session's
// mutex for every thought, and opening and closing them was most of what
// a turn cost); Close closes them. A flock belongs to an open file, not
// to a process, so goroutines of this process take turns on a channel
// first. After the lock is taken the path is checked to still name the
// open file: one deleted or replaced meanwhile is opened afresh, so that
// two processes never hold locks on two different files of one name.
type Mutex struct {
	path    string
	timeout time.Duration
	turn    chan struct{} // full while a goroutine of this process holds or takes it

	// Guarded by turn.
	gate, f *os.File
	ino     uint64 // f's inode
	gateIno uint64 // gate's inode
	// checkGate is set when the files were opened and cleared once a turn
	// found the gate's path still naming gate (see lockFiles).
	checkGate bool
	last      []byte // the record this mutex wrote at its last turn
	seen      []byte // the lock file's record, read at each turn
}

// NewMutex returns the mutex kept in the file path (and path+".gate"),
// whose Lock waits at most timeout.
func NewMutex(path string, timeout time.Duration) *Mutex {
	return &Mutex{path: path, timeout: timeout, turn: make(chan struct{}, 1)}
}

// Held is a Mutex taken by this process; Unlock lets it go.
type Held struct {
	m *Mutex
	// Others is false when nobody else — no other process, no other
	// Mutex of this path — held the mutex since this Mutex last let it
	// go; true when another did, or it cannot tell (its first turn). The
	// record its holders leave in the lock file tells.
	Others bool
}

// Lock takes the mutex, waiting at most the mutex's timeout, and records
// this process as its holder in the lock file.
func (m *Mutex) Lock(ctx context.Context) (*Held, error) {
	start := time.Now()
	if err := m.takeTurn(ctx); err != nil {
		return nil, err
	}
	h, err := m.lockFiles(ctx, start)
	if err != nil {
		<-m.turn
		return nil, err
	}
	return h, nil
}

// takeTurn waits for the goroutines of this process that hold or take
// the mutex.
func (m *Mutex) takeTurn(ctx context.Context) error {
	select {
	case m.turn <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(max(m.timeout, 0))
	defer t.Stop()
	start := time.Now()
	select {
	case m.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return heldError(m.path, NewRecord(m.path), time.Since(start))
	}
}

func (m *Mutex) open() error {
	gate, err := openFile(m.path+".gate", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	f, err := openFile(m.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		gate.Close()
		return err
	}
	ino, err := fileID(f)
	if err == nil {
		m.gateIno, err = fileID(gate)
	}
	if err != nil {
		gate.Close()
		f.Close()
		return err
	}
	m.gate, m.f, m.ino, m.last, m.checkGate = gate, f, ino, nil, true
	return nil
}

func (m *Mutex) closeFiles() {
	if m.f != nil {
		m.gate.Close()
		m.f.Close()
		m.gate, m.f, m.last = nil, nil, nil
	}
}

// lockFiles takes the gate, then the lock, then lets the gate go; the
// caller holds the turn.
func (m *Mutex) lockFiles(ctx context.Context, start time.Time) (*Held, error) {
	for {
		if m.f == nil {
			if err := m.open(); err != nil {
				return nil, err
			}
		}
		if err := Lock(ctx, m.gate, nil, m.timeout-time.Since(start)); err != nil {
			if _, ok := err.(*HeldError); ok {
				// The gate's holder is only another waiter: name the lock's.
				err = heldError(m.path, RecordIn(m.f), time.Since(start))
			}
			return nil, err
		}
		if err := Lock(ctx, m.f, nil, m.timeout-time.Since(start)); err != nil {
			unlock(m.gate)
			if he, ok := err.(*HeldError); ok {
				he.Waited = time.Since(start)
				if h, ok := ReadHolder(m.path); ok {
					he.Holder = &h
				}
			}
			return nil, err
		}
		if id, err := pathID(m.path); err != nil || id != m.ino {
			// Deleted or replaced while we held it open: a process that
			// opened the path now locks another file. Start again on
			// what the path names.
			unlock(m.f)
			unlock(m.gate)
			m.closeFiles()
			continue
		}
		if m.checkGate {
			// Remove deletes the lock, then the gate. A process that
			// opened the old gate just before and made the new lock just
			// after holds a real lock behind a gate nobody else meets
			// (which costs fairness, not exclusion). The gate is only
			// deleted with the lock, whose deletion every holder notices
			// above, so checking it on the first turn after opening is
			// enough: by then any Remove that deleted it is over (it held
			// this gate until then).
			if id, err := pathID(m.path + ".gate"); err != nil || id != m.gateIno {
				unlock(m.f)
				unlock(m.gate)
				m.closeFiles()
				continue
			}
			m.checkGate = false
		}
		if m.seen == nil {
			m.seen = make([]byte, recordSize)
		}
		n, _ := m.f.ReadAt(m.seen, 0)
		others := m.last == nil || n != recordSize || !bytes.Equal(m.seen, m.last)
		if others {
			// Our own record still there means nobody held it since:
			// it already names this process, since its run of turns
			// began, and a write a turn is spared.
			m.last = markFile(m.f, m.last)
		}
		unlock(m.gate)
		return &Held{m: m, Others: others}, nil
	}
}

// Unlock releases the mutex.
func (h *Held) Unlock() error {
	err := unlock(h.m.f)
	<-h.m.turn
	return err
}

// Remove is Close that also deletes the mutex's two files, unless
// somebody else uses them: another process (or another Mutex of this
// path) holds the lock or waits at the gate. Files of a mutex that is
// taken now and then are otherwise left on disk for good, a 4 kB block
// each for the record on ext4: with a lock per session, some 400 MB and
// 200,000 files for a ledger whose 100,000 sessions this data directory
// wrote. The next Lock makes them again.
//
// Deleting them does not break exclusion: they are deleted while this
// Mutex holds both, and a process that opened them before finds, once it
// holds the lock, that the path no longer names its file and starts
// again on the new one (lockFiles), as it does when a file is replaced.
// Where deleting an open file is refused or deferred (Windows), Remove
// only closes them.
func (m *Mutex) Remove() bool {
	select {
	case m.turn <- struct{}{}:
	default:
		return false
	}
	if m.f != nil && removable {
		m.removeFiles()
	}
	m.closeFiles()
	<-m.turn
	return true
}

// removeFiles deletes the files if it can take the gate and the lock at
// once and the path still names the lock file it holds; the caller holds
// the turn.
func (m *Mutex) removeFiles() {
	if ok, err := tryLock(m.gate); err != nil || !ok {
		return // a waiter
	}
	defer unlock(m.gate)
	if ok, err := tryLock(m.f); err != nil || !ok {
		return // a holder
	}
	defer unlock(m.f)
	if id, err := pathID(m.path); err != nil || id != m.ino {
		return // somebody's new file
	}
	if os.Remove(m.path) == nil {
		os.Remove(m.path + ".gate")
	}
}

// Close closes the mutex's files, unless a goroutine holds or is taking
// it; it reports whether it did. A closed Mutex may be taken again.
func (m *Mutex) Close() bool {
	select {
	case m.turn <- struct{}{}:
	default:
		return false
	}
	m.closeFiles()
	<-m.turn
	return true
}
