package trace

import (
	"slices"
	"testing"
)

// TestReactorThreads_AddWatchRemove: a watcher sees the set at once and
// after each change; a remove runs once however often it is called.
func TestReactorThreads_AddWatchRemove(t *testing.T) {
	base := ReactorThreads()
	var seen [][]int
	stop := WatchReactorThreads(func(tids []int) { seen = append(seen, tids) })
	defer stop()
	rmA := AddReactorThread(1_000_001)
	rmB := AddReactorThread(1_000_002)
	rmA()
	rmA()
	want := [][]int{
		base,
		append(slices.Clone(base), 1_000_001),
		append(slices.Clone(base), 1_000_001, 1_000_002),
		append(slices.Clone(base), 1_000_002),
	}
	if len(seen) != len(want) {
		t.Fatalf("watcher saw %v, want %v", seen, want)
	}
	for i := range want {
		if !slices.Equal(seen[i], want[i]) {
			t.Fatalf("watcher saw %v, want %v", seen, want)
		}
	}
	rmB()
	if got := ReactorThreads(); !slices.Equal(got, base) {
		t.Errorf("after both removed: %v, want %v", got, base)
	}
}
