package store

// fsyncOutcome is how an fsync made its inode durable; each is counted in
// Stats and set on the fsync's span ("outcome").
type fsyncOutcome uint8

const (
	// outcomeCommitted: the inode's last change was committed already
	// (the lock-free check: one atomic load).
	outcomeCommitted fsyncOutcome = iota
	// outcomeInLog: it was in a durable log already (lock-free too).
	outcomeInLog
	// outcomeLogged: the fsync logged it and synced the log.
	outcomeLogged
	// outcomeCommit: the fsync committed the transaction instead, for a
	// fallbackReason.
	outcomeCommit
	// outcomeFailed: the fsync failed (its error says why); not counted.
	outcomeFailed
)

func (o fsyncOutcome) String() string {
	switch o {
	case outcomeCommitted:
		return "committed"
	case outcomeInLog:
		return "in_log"
	case outcomeLogged:
		return "logged"
	case outcomeCommit:
		return "commit"
	case outcomeFailed:
		return "failed"
	}
	return "unknown"
}

// fallbackReason is why an fsync committed instead of logging. Its String
// is the key of Stats.FsyncFallbacks and the fsync span's "fallback"
// (docs/design/logtree.md lists them).
type fallbackReason uint8

const (
	// fallbackNone: nothing forces a commit.
	fallbackNone fallbackReason = iota
	// fallbackRename: a rename in the transaction (the log cannot
	// express the fsyncs that follow it: btrfs's directory trouble cases).
	fallbackRename
	// fallbackLoggedNameChanged: a name of an inode already logged in the
	// transaction changed.
	fallbackLoggedNameChanged
	// fallbackNameItemFull: replay could build a name item too large for a
	// leaf (name_room.go).
	fallbackNameItemFull
	// fallbackOldTransaction: the inode's change is in a transaction that
	// is committing.
	fallbackOldTransaction
	// fallbackLogFull: the log tree reached its bound, or the transaction
	// has no log chain to append to (the device was full at its head's
	// allocation, or is now at the next record's).
	fallbackLogFull
	// fallbackLogPoisoned: a log of the transaction may hold half an fsync.
	fallbackLogPoisoned
	// fallbackLogError: logging failed (the error is logged).
	fallbackLogError
	// fallbackUnlinked: the inode is an orphan (open, its last name gone:
	// orphan.go). Replay would take a logged inode without names for one
	// to delete, and its orphan item is in the tree, not the log: commit.
	fallbackUnlinked
)

func (r fallbackReason) String() string {
	switch r {
	case fallbackNone:
		return ""
	case fallbackRename:
		return "rename"
	case fallbackLoggedNameChanged:
		return "logged_name_changed"
	case fallbackNameItemFull:
		return "name_item_full"
	case fallbackOldTransaction:
		return "old_transaction"
	case fallbackLogFull:
		return "log_full"
	case fallbackLogPoisoned:
		return "log_poisoned"
	case fallbackLogError:
		return "log_error"
	case fallbackUnlinked:
		return "unlinked"
	}
	return "unknown"
}
