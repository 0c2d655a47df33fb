package store

import "time"

// The flusher writes dirty data back in the background: inodes whose
// oldest dirty page is older than DirtyExpire, and — oldest first — as many
// as it takes to bring the dirty total under the background threshold
// whenever it is above it. Writers past the budget wait in reserve and
// kick it.

// flushTick is how often the flusher looks at the ages of dirty data.
const flushTick = 250 * time.Millisecond

func (s *Store) flusher() {
	defer close(s.flusherDone)
	t := time.NewTicker(flushTick)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.wb.kick:
		}
		s.flushOnce()
	}
}

// flushOnce writes back what is too old and, past the background
// threshold or while a writer waits for the budget, the oldest inodes
// until under it.
func (s *Store) flushOnce() {
	expired := time.Now().Add(-s.opts.DirtyExpire)
	for _, in := range s.wb.dirtyInodes() {
		in.mu.Lock()
		since := in.pages.dirtySince
		in.mu.Unlock()
		over := s.wb.dirtyBytes() > s.opts.DirtyBackgroundBytes || s.wb.waiting()
		if !over && (since.IsZero() || since.After(expired)) {
			continue
		}
		if err := s.writebackInode(in); err != nil {
			// Logged by writebackInode; the pages stay dirty and
			// fsync/sync report the error to whoever waits on them.
			s.stats.writebackErrors.Add(1)
		}
		select {
		case <-s.stop:
			return
		default:
		}
	}
}
