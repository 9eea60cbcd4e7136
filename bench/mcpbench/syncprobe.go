package main

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// syncProbe times what a durable thought waits for and an in-memory
// server does not: a record of a thought's size (1,450 bytes, as the
// log's are) written after the last one into zeros laid ahead, then
// Datasync'd, n times, in a file under dir (the data directory's file
// system). It returns the mean and the median.
func syncProbe(dir string, n int) (mean, median time.Duration, err error) {
	f, err := os.CreateTemp(dir, "mcpbench-syncprobe")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const record = 1450
	if _, err := f.Write(make([]byte, (n+1)*record)); err != nil {
		return 0, 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, 0, err
	}
	buf := make([]byte, record)
	took := make([]time.Duration, n)
	var sum time.Duration
	for i := range took {
		for j := range buf {
			buf[j] = byte(i + j + 1)
		}
		start := time.Now()
		if _, err := f.WriteAt(buf, int64(i*record)); err != nil {
			return 0, 0, err
		}
		if err := durable.Datasync(f); err != nil {
			return 0, 0, err
		}
		took[i] = time.Since(start)
		sum += took[i]
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	return sum / time.Duration(n), took[n/2], nil
}

// printSyncProbe prints syncProbe's figures, taken in dir, for the pair
// about to run.
func printSyncProbe(dir string, pair int) {
	mean, median, err := syncProbe(dir, 500)
	if err != nil {
		fmt.Printf("pair %d: sync probe failed: %v\n", pair, err)
		return
	}
	fmt.Printf("pair %d: sync probe: a thought-sized append and its sync take %v mean, %v median here (the floor a durable thought pays over an in-memory server)\n",
		pair, mean.Round(time.Microsecond), median.Round(time.Microsecond))
}
