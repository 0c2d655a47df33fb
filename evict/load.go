package evict

import "ustore/internal/assert"

// call is one in-flight load of a key by GetOrLoad: the first goroutine to
// miss runs load; the others that miss the same key meanwhile wait on done
// and share its result (singleflight, per key, inside the shard).
//
// waiters and removed change under the shard's write lock; entry and err
// are written by the loader before it closes done, and read by the waiters
// after done is closed.
type call[E Entry] struct {
	done chan struct{}
	// waiters counts the goroutines waiting on done (not the loader).
	waiters int
	// removed: Remove of the key ran during the load, so the loaded entry
	// must not be cached.
	removed bool
	entry   E
	err     error
}

// GetOrLoad returns the entry cached under key, or else calls load once to
// produce it, caches it and returns it. Concurrent misses of one key share
// one call of load: the others wait for it and get its result. A load that
// fails (or panics: ErrLoadPanicked) caches nothing, and every waiter gets
// its error (with the zero E); the next GetOrLoad tries again. If the key
// was added while load ran, everyone gets the added entry and the loaded
// one is dropped, so that callers never hold two entries for a key the
// cache holds one of; if it was removed, the loaded entry is returned but
// not cached. load runs with no lock held and may use the cache, except to
// GetOrLoad its own key, which would wait for itself.
func (c *Cache[E]) GetOrLoad(key uint64, load func() (E, error)) (E, error) {
	i, s := c.shardOf(key)
	s.mu.RLock()
	e, ok := s.lookup(key)
	s.mu.RUnlock()
	if ok {
		s.hits.Add(1)
		return e, nil
	}
	s.mu.Lock()
	// Look again: it may have been added between the two locks.
	if e, ok := s.lookup(key); ok {
		s.mu.Unlock()
		s.hits.Add(1)
		return e, nil
	}
	s.misses.Add(1)
	if cl, ok := s.loading[key]; ok {
		cl.waiters++
		s.mu.Unlock()
		<-cl.done
		return cl.entry, cl.err
	}
	cl := &call[E]{done: make(chan struct{})}
	s.loading[key] = cl
	s.mu.Unlock()
	return c.runLoad(i, s, key, cl, load)
}

// runLoad calls load for key's call cl, then publishes the result: caches
// it (unless the key was removed meanwhile), and wakes the waiters. A panic
// in load still wakes them, with ErrLoadPanicked, and then goes on.
func (c *Cache[E]) runLoad(i int, s *shard[E], key uint64, cl *call[E], load func() (E, error)) (E, error) {
	s.loads.Add(1)
	returned := false
	defer func() {
		if !returned {
			var zero E
			c.finishLoad(i, s, key, cl, zero, ErrLoadPanicked)
		}
	}()
	e, err := load()
	returned = true
	return c.finishLoad(i, s, key, cl, e, err)
}

// finishLoad ends key's load cl with (e, err) and returns what the loader
// and every waiter get.
func (c *Cache[E]) finishLoad(i int, s *shard[E], key uint64, cl *call[E], e E, err error) (E, error) {
	var (
		added *item[E]
		bytes int64
	)
	if err != nil {
		var zero E
		e = zero
	} else {
		bytes = e.CacheBytes()
		assert.That(bytes >= 0, "evict: Entry.CacheBytes is negative")
	}
	s.mu.Lock()
	assert.That(s.loading[key] == cl, "evict: a key's load finished but is not the key's call")
	delete(s.loading, key)
	if err == nil {
		if cached, ok := s.lookup(key); ok {
			e = cached
		} else if !cl.removed {
			added = s.insertLocked(key, e, bytes)
		}
	}
	cl.entry, cl.err = e, err
	s.mu.Unlock()
	close(cl.done)
	if added != nil {
		c.afterInsert(i, added, bytes)
	}
	return e, err
}
