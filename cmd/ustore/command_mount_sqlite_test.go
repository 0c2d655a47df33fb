package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMount_SQLiteWAL: the sqlite3 shell on the mount in WAL mode (the
// -wal file written and fsynced at each commit, the -shm file shared
// through mmap): a table filled by 200 transactions, a rollback that
// leaves nothing, a reader process that sees the committed rows while a
// writer holds an open transaction and the new ones once it commits;
// then the server stopped and started again and the store mounted
// again: integrity_check is ok, every row is there with the content its
// checksum says, the table hashes as before, and fsck --data is clean.
func TestMount_SQLiteWAL(t *testing.T) {
	notUnderRace(t)
	sqlite := needTool(t, "sqlite3", "sqlite3")
	ms := newMountedStore(t)
	if err := os.Mkdir(filepath.Join(ms.mnt(), "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(ms.mnt(), "db", "t.db")
	q := func(sql string) string {
		t.Helper()
		cmd := exec.Command(sqlite, "-bail", db)
		cmd.Stdin = strings.NewReader(sql)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sqlite3: %v\n%s\n(input: %.300s)", err, out, sql)
		}
		return strings.TrimSpace(string(out))
	}
	if got := q("PRAGMA journal_mode=WAL;"); got != "wal" {
		t.Fatalf("journal_mode=WAL: %q", got)
	}
	// h is each row's checksum of its blob: a row whose blob changed on
	// the way shows in a count.
	q("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL, b BLOB NOT NULL, h TEXT NOT NULL);")
	const txns, rowsPerTxn = 200, 10
	var sql strings.Builder
	for i := range txns {
		sql.WriteString("BEGIN;\n")
		for j := range rowsPerTxn {
			fmt.Fprintf(&sql, "INSERT INTO t(v, b, h) SELECT 'row %d.%d', x, hex(sha3(x)) FROM (SELECT randomblob(%d) AS x);\n", i, j, 100+(i*rowsPerTxn+j)%3000)
		}
		sql.WriteString("COMMIT;\n")
	}
	q(sql.String())
	count := func() string { return q("SELECT count(*), count(DISTINCT v), sum(length(b)) FROM t;") }
	bad := "SELECT count(*) FROM t WHERE hex(sha3(b)) != h;"
	committed := count()
	if !strings.HasPrefix(committed, fmt.Sprintf("%d|%d|", txns*rowsPerTxn, txns*rowsPerTxn)) {
		t.Fatalf("after %d transactions: %s", txns, committed)
	}
	q("BEGIN; DELETE FROM t WHERE id % 2 = 0; INSERT INTO t(v, b, h) VALUES ('rolled back', x'00', '00'); UPDATE t SET v = 'changed'; ROLLBACK;")
	if got := count(); got != committed {
		t.Fatalf("after a rollback: %s, want %s", got, committed)
	}

	// A writer with its transaction open, and readers beside it.
	w := exec.Command(sqlite, "-bail", db)
	stdin, err := w.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var wErr strings.Builder
	w.Stderr = &wErr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	say := func(sql, want string) {
		t.Helper()
		if _, err := io.WriteString(stdin, sql+"\nSELECT '"+want+"';\n"); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			if lines.Text() == want {
				return
			}
		}
		t.Fatalf("the writer did not answer %q: %v %s", want, lines.Err(), wErr.String())
	}
	say("BEGIN IMMEDIATE; INSERT INTO t(v, b, h) SELECT 'open ' || value, x, hex(sha3(x)) FROM generate_series(1, 100), (SELECT randomblob(512) AS x);", "held")
	if got := count(); got != committed {
		t.Fatalf("a reader beside an open write transaction: %s, want %s (the committed rows)", got, committed)
	}
	say("COMMIT;", "committed")
	after := count()
	if !strings.HasPrefix(after, fmt.Sprintf("%d|", txns*rowsPerTxn+100)) {
		t.Fatalf("a reader after the writer's commit: %s", after)
	}
	stdin.Close()
	if err := w.Wait(); err != nil {
		t.Fatalf("the writer: %v\n%s", err, wErr.String())
	}
	hash := q("SELECT hex(sha3_query('SELECT * FROM t ORDER BY id'));")
	if got := q(bad); got != "0" {
		t.Fatalf("%s rows whose blob does not match its checksum", got)
	}

	ms.down(t)
	ms.up(t)
	if got := q("PRAGMA integrity_check;"); got != "ok" {
		t.Fatalf("integrity_check after a restart: %s", got)
	}
	if got := count(); got != after {
		t.Fatalf("after a restart: %s, want %s", got, after)
	}
	if got := q(bad); got != "0" {
		t.Fatalf("after a restart, %s rows whose blob does not match its checksum", got)
	}
	if got := q("SELECT hex(sha3_query('SELECT * FROM t ORDER BY id'));"); got != hash {
		t.Fatalf("the table's hash after a restart: %s, want %s", got, hash)
	}
	ms.downAndFsck(t)
}
