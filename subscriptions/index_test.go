package subscriptions

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// indexCacheOptions are the cache settings every index test runs with: the
// default, a cache smaller than the number of event types used, and none.
var indexCacheOptions = []struct {
	name string
	opts *IndexOptions
}{
	{"default cache", nil},
	{"cache of 2", &IndexOptions{CacheSize: 2}},
	{"no cache", &IndexOptions{CacheSize: -1}},
}

func testEntry(t testing.TB, id string, f mcpe.Filter) *Entry {
	t.Helper()
	e, err := NewEntry(&Subscription{
		Principal: "alice",
		Subscription: mcpe.Subscription{
			ID:       id,
			Status:   mcpe.StatusActive,
			Filter:   f,
			Delivery: mcpe.DefaultDelivery(),
		},
	})
	if err != nil {
		t.Fatalf("NewEntry(%q): %v", id, err)
	}
	return e
}

func testEvent(typ string, priority mcpe.Priority, tags ...string) *mcpe.Event {
	if priority == "" {
		priority = mcpe.PriorityNormal
	}
	return &mcpe.Event{
		ID:       "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
		Type:     typ,
		Data:     []byte(`{}`),
		Metadata: mcpe.Metadata{Timestamp: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC), Priority: priority, Tags: tags},
	}
}

// entryIDs returns the sorted IDs of es, failing on a duplicate.
func entryIDs(t testing.TB, es []*Entry) []string {
	t.Helper()
	ids := make([]string, 0, len(es))
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("entry %q returned twice in %q", ids[i], ids)
		}
	}
	return ids
}

// matchIDs routes ev through x and returns the sorted IDs of the result.
func matchIDs(t testing.TB, x *Index, ev *mcpe.Event) []string {
	t.Helper()
	return entryIDs(t, x.Match(ev))
}

// bruteForceIDs checks ev against every matcher, the reference for Index.
func bruteForceIDs(entries map[string]*Entry, ev *mcpe.Event) []string {
	ids := []string{}
	for id, e := range entries {
		if e.matcher.Match(ev) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func TestIndexMatch(t *testing.T) {
	filters := map[string]mcpe.Filter{
		"exact":      {EventTypes: []string{"github.push"}},
		"wild":       {EventTypes: []string{"github.*"}},
		"issue":      {EventTypes: []string{"github.issue.*"}},
		"all":        {EventTypes: []string{"*"}},
		"suffix":     {EventTypes: []string{"*.opened"}},
		"tags-only":  {Tags: []string{"ci"}},
		"prio-only":  {Priority: []mcpe.Priority{mcpe.PriorityCritical}},
		"wild-high":  {EventTypes: []string{"github.*"}, Priority: []mcpe.Priority{mcpe.PriorityHigh, mcpe.PriorityCritical}},
		"exact-tags": {EventTypes: []string{"slack.message"}, Tags: []string{"deploy", "ci"}},
		// Every pattern matches github.push: it must come back once.
		"overlap": {EventTypes: []string{"github.push", "github.*", "*.push", "{github,gitlab}.push", "*"}},
		"mcpe": {
			EventTypes: []string{"github.push", "github.deployment.*", "slack.message"},
			Tags:       []string{"ci", "deploy"},
			Priority:   []mcpe.Priority{mcpe.PriorityHigh, mcpe.PriorityCritical},
		},
	}
	tests := []struct {
		ev   *mcpe.Event
		want []string
	}{
		{testEvent("github.push", ""), []string{"all", "exact", "overlap", "wild"}},
		{testEvent("github.push", mcpe.PriorityHigh, "ci"), []string{"all", "exact", "mcpe", "overlap", "tags-only", "wild", "wild-high"}},
		{testEvent("github.issue.opened", mcpe.PriorityCritical), []string{"all", "issue", "overlap", "prio-only", "suffix", "wild", "wild-high"}},
		{testEvent("github.deployment.created", mcpe.PriorityHigh, "x", "deploy"), []string{"all", "mcpe", "overlap", "wild", "wild-high"}},
		{testEvent("gitlab.push", ""), []string{"all", "overlap"}},
		{testEvent("slack.message", mcpe.PriorityLow, "deploy"), []string{"all", "exact-tags", "overlap"}},
		{testEvent("slack.message", mcpe.PriorityCritical, "ci"), []string{"all", "exact-tags", "mcpe", "overlap", "prio-only", "tags-only"}},
		{testEvent("jira.opened", ""), []string{"all", "overlap", "suffix"}},
		{testEvent("github", ""), []string{"all", "overlap"}},
	}
	for _, c := range indexCacheOptions {
		t.Run(c.name, func(t *testing.T) {
			x := NewIndex(c.opts)
			entries := make(map[string]*Entry)
			for id, f := range filters {
				entries[id] = testEntry(t, id, f)
				x.Put(entries[id])
			}
			if got := x.Len(); got != len(filters) {
				t.Errorf("Len() = %d, want %d", got, len(filters))
			}
			// Twice, so that the second round is served by the cache.
			for range 2 {
				for _, tt := range tests {
					got := matchIDs(t, x, tt.ev)
					if diff := cmp.Diff(tt.want, got); diff != "" {
						t.Errorf("Match(%q %s %q) mismatch (-want +got):\n%s", tt.ev.Type, tt.ev.Metadata.Priority, tt.ev.Metadata.Tags, diff)
					}
					if diff := cmp.Diff(bruteForceIDs(entries, tt.ev), got); diff != "" {
						t.Errorf("Match(%q) differs from the matchers (-want +got):\n%s", tt.ev.Type, diff)
					}
				}
			}
		})
	}
}

func TestIndexMatchEmpty(t *testing.T) {
	x := NewIndex(nil)
	if got := x.Match(testEvent("a", "")); len(got) != 0 {
		t.Errorf("Match on an empty index = %v, want none", entryIDs(t, got))
	}
	if got := x.Len(); got != 0 {
		t.Errorf("Len() = %d, want 0", got)
	}
}

func TestIndexReplaceAndRemove(t *testing.T) {
	push := testEvent("github.push", "")
	issue := testEvent("github.issue.opened", "")
	for _, c := range indexCacheOptions {
		t.Run(c.name, func(t *testing.T) {
			x := NewIndex(c.opts)
			x.Put(testEntry(t, "a", mcpe.Filter{EventTypes: []string{"github.push"}}))
			x.Put(testEntry(t, "b", mcpe.Filter{EventTypes: []string{"github.push"}}))
			x.Put(testEntry(t, "c", mcpe.Filter{EventTypes: []string{"github.*"}}))
			x.Put(testEntry(t, "d", mcpe.Filter{EventTypes: []string{"github.*"}}))

			steps := []struct {
				name      string
				change    func()
				wantLen   int
				wantPush  []string
				wantIssue []string
			}{
				{"initial", func() {}, 4, []string{"a", "b", "c", "d"}, []string{"c", "d"}},
				{"replace exact with pattern", func() {
					x.Put(testEntry(t, "a", mcpe.Filter{EventTypes: []string{"github.issue.*"}}))
				}, 4, []string{"b", "c", "d"}, []string{"a", "c", "d"}},
				{"replace pattern with exact", func() {
					x.Put(testEntry(t, "c", mcpe.Filter{EventTypes: []string{"github.push"}}))
				}, 4, []string{"b", "c", "d"}, []string{"a", "d"}},
				{"replace with a tag filter", func() {
					x.Put(testEntry(t, "d", mcpe.Filter{EventTypes: []string{"github.*"}, Tags: []string{"ci"}}))
				}, 4, []string{"b", "c"}, []string{"a"}},
				{"remove one of two sharing an exact type", func() { x.Remove("b") }, 3, []string{"c"}, []string{"a"}},
				{"remove unknown", func() { x.Remove("nope") }, 3, []string{"c"}, []string{"a"}},
				{"remove twice", func() { x.Remove("b") }, 3, []string{"c"}, []string{"a"}},
				{"put the same entry again", func() {
					x.Put(testEntry(t, "e", mcpe.Filter{EventTypes: []string{"github.push", "*"}}))
					x.Put(testEntry(t, "e", mcpe.Filter{EventTypes: []string{"github.push", "*"}}))
				}, 4, []string{"c", "e"}, []string{"a", "e"}},
				{"remove all", func() {
					for _, id := range []string{"a", "c", "d", "e"} {
						x.Remove(id)
					}
				}, 0, []string{}, []string{}},
			}
			for _, s := range steps {
				s.change()
				if got := x.Len(); got != s.wantLen {
					t.Errorf("%s: Len() = %d, want %d", s.name, got, s.wantLen)
				}
				if diff := cmp.Diff(s.wantPush, matchIDs(t, x, push)); diff != "" {
					t.Errorf("%s: Match(github.push) mismatch (-want +got):\n%s", s.name, diff)
				}
				if diff := cmp.Diff(s.wantIssue, matchIDs(t, x, issue)); diff != "" {
					t.Errorf("%s: Match(github.issue.opened) mismatch (-want +got):\n%s", s.name, diff)
				}
			}
			// Nothing is left behind once every entry is gone.
			if len(x.entries) != 0 || len(x.exact) != 0 || len(x.patterns) != 0 || len(x.prefixes) != 0 {
				t.Errorf("empty index keeps state: %d entries, %d exact, %d prefixes, prefix lengths %v",
					len(x.entries), len(x.exact), len(x.patterns), x.prefixes)
			}
		})
	}
}

// TestIndexCacheInvalidation checks that a result computed before a change is
// never returned after it, whatever the change.
func TestIndexCacheInvalidation(t *testing.T) {
	ev := testEvent("svc.created", mcpe.PriorityHigh, "ci")
	changes := []struct {
		name   string
		change func(t *testing.T, x *Index)
		want   []string
	}{
		{"put exact", func(t *testing.T, x *Index) {
			x.Put(testEntry(t, "exact", mcpe.Filter{EventTypes: []string{"svc.created"}}))
		}, []string{"base", "exact"}},
		{"put pattern", func(t *testing.T, x *Index) {
			x.Put(testEntry(t, "pattern", mcpe.Filter{EventTypes: []string{"svc.*"}}))
		}, []string{"base", "pattern"}},
		{"put tags only", func(t *testing.T, x *Index) {
			x.Put(testEntry(t, "tags", mcpe.Filter{Tags: []string{"ci"}}))
		}, []string{"base", "tags"}},
		{"put priority only", func(t *testing.T, x *Index) {
			x.Put(testEntry(t, "prio", mcpe.Filter{Priority: []mcpe.Priority{mcpe.PriorityHigh}}))
		}, []string{"base", "prio"}},
		{"put non-matching", func(t *testing.T, x *Index) {
			x.Put(testEntry(t, "other", mcpe.Filter{EventTypes: []string{"svc.deleted"}}))
		}, []string{"base"}},
		{"replace to stop matching", func(t *testing.T, x *Index) {
			x.Put(testEntry(t, "base", mcpe.Filter{EventTypes: []string{"svc.deleted"}}))
		}, []string{}},
		{"replace with a rest part that fails", func(t *testing.T, x *Index) {
			x.Put(testEntry(t, "base", mcpe.Filter{EventTypes: []string{"svc.*"}, Priority: []mcpe.Priority{mcpe.PriorityLow}}))
		}, []string{}},
		{"remove", func(t *testing.T, x *Index) { x.Remove("base") }, []string{}},
	}
	for _, c := range indexCacheOptions {
		for _, ch := range changes {
			t.Run(c.name+"/"+ch.name, func(t *testing.T) {
				x := NewIndex(c.opts)
				x.Put(testEntry(t, "base", mcpe.Filter{EventTypes: []string{"svc.*"}}))
				x.Put(testEntry(t, "unrelated", mcpe.Filter{EventTypes: []string{"other.*"}}))
				// Fill the cache, including for the type the change is about.
				for range 2 {
					matchIDs(t, x, testEvent("other.created", ""))
					if diff := cmp.Diff([]string{"base"}, matchIDs(t, x, ev)); diff != "" {
						t.Fatalf("before: mismatch (-want +got):\n%s", diff)
					}
				}
				ch.change(t, x)
				for range 2 {
					if diff := cmp.Diff(ch.want, matchIDs(t, x, ev)); diff != "" {
						t.Errorf("after: mismatch (-want +got):\n%s", diff)
					}
				}
			})
		}
	}
}

// TestIndexResultIsASnapshot checks that a change to the index does not
// rewrite a result returned before it: results never share memory with the
// index's buckets.
func TestIndexResultIsASnapshot(t *testing.T) {
	for _, c := range indexCacheOptions {
		t.Run(c.name, func(t *testing.T) {
			x := NewIndex(c.opts)
			for _, id := range []string{"a", "b", "c"} {
				x.Put(testEntry(t, "exact-"+id, mcpe.Filter{EventTypes: []string{"svc.created"}}))
				x.Put(testEntry(t, "pattern-"+id, mcpe.Filter{EventTypes: []string{"svc.*"}}))
			}
			// One type matched only by exact entries, one only by patterns,
			// one by both.
			events := []*mcpe.Event{testEvent("svc.created", ""), testEvent("svc.deleted", ""), testEvent("svc.created", mcpe.PriorityHigh)}
			x.Remove("pattern-a")
			x.Remove("pattern-b")
			x.Remove("pattern-c")
			x.Put(testEntry(t, "pattern-a", mcpe.Filter{EventTypes: []string{"svc.d*"}}))
			x.Put(testEntry(t, "pattern-b", mcpe.Filter{EventTypes: []string{"svc.d*"}}))
			x.Put(testEntry(t, "both", mcpe.Filter{EventTypes: []string{"svc.created"}, Priority: []mcpe.Priority{mcpe.PriorityHigh}}))
			results := make([][]*Entry, len(events))
			before := make([][]string, len(events))
			for i, ev := range events {
				results[i] = x.Match(ev)
				before[i] = entryIDs(t, results[i])
			}
			x.Remove("exact-a")
			x.Remove("pattern-a")
			x.Put(testEntry(t, "exact-d", mcpe.Filter{EventTypes: []string{"svc.created"}}))
			x.Put(testEntry(t, "pattern-c", mcpe.Filter{EventTypes: []string{"svc.d*"}}))
			for i, ev := range events {
				if diff := cmp.Diff(before[i], entryIDs(t, results[i])); diff != "" {
					t.Errorf("%s: earlier result changed (-want +got):\n%s", ev.Type, diff)
				}
			}
			want := [][]string{
				{"exact-b", "exact-c", "exact-d"},
				{"pattern-b", "pattern-c"},
				{"both", "exact-b", "exact-c", "exact-d"},
			}
			for i, ev := range events {
				if diff := cmp.Diff(want[i], matchIDs(t, x, ev)); diff != "" {
					t.Errorf("Match(%s) after the changes mismatch (-want +got):\n%s", ev.Type, diff)
				}
			}
		})
	}
}

// cacheLen counts the event types in the cache.
func cacheLen(x *Index) int {
	if x.cache == nil {
		return 0
	}
	x.cache.mu.RLock()
	defer x.cache.mu.RUnlock()
	return len(x.cache.m)
}

func TestIndexCacheBound(t *testing.T) {
	const size = 3
	x := NewIndex(&IndexOptions{CacheSize: size})
	entries := make(map[string]*Entry)
	for i := range 4 {
		id := fmt.Sprintf("s%d", i)
		entries[id] = testEntry(t, id, mcpe.Filter{EventTypes: []string{fmt.Sprintf("svc%d.*", i%2)}})
		x.Put(entries[id])
	}
	for round := range 3 {
		for i := range 10 {
			ev := testEvent(fmt.Sprintf("svc%d.e%d", i%2, i), "")
			if diff := cmp.Diff(bruteForceIDs(entries, ev), matchIDs(t, x, ev)); diff != "" {
				t.Fatalf("round %d, %s: mismatch (-want +got):\n%s", round, ev.Type, diff)
			}
			// A type is cached from its second miss on, so from the
			// second round.
			if n, least := cacheLen(x), min(round, 1); n < least || n > size {
				t.Fatalf("round %d, after %s: the cache holds %d types, want %d to %d", round, ev.Type, n, least, size)
			}
		}
	}
	// A type seen last is served from the cache.
	ev := testEvent("svc1.e9", "")
	if x.cache.get(ev.Type) == nil {
		t.Errorf("type %q just matched is not in the cache", ev.Type)
	}
}

func TestIndexCacheDefaultAndDisabled(t *testing.T) {
	if got := NewIndex(nil).cache.maxTypes; got != DefaultIndexCacheSize {
		t.Errorf("NewIndex(nil) cache size = %d, want %d", got, DefaultIndexCacheSize)
	}
	if got := NewIndex(&IndexOptions{}).cache.maxTypes; got != DefaultIndexCacheSize {
		t.Errorf("NewIndex(&IndexOptions{}) cache size = %d, want %d", got, DefaultIndexCacheSize)
	}
	x := NewIndex(&IndexOptions{CacheSize: -1})
	x.Put(testEntry(t, "a", mcpe.Filter{EventTypes: []string{"svc.*"}}))
	for i := range 5 {
		matchIDs(t, x, testEvent(fmt.Sprintf("svc.e%d", i), ""))
	}
	if n := cacheLen(x); n != 0 {
		t.Errorf("disabled cache holds %d types, want 0", n)
	}
}

// Vocabulary of the property test: types of up to three segments over a, b
// and c, and patterns of every kind over them.
var (
	propSegments = []string{"a", "b", "c"}
	propPatterns = []string{
		"*", "a.*", "b.*", "a.b.*", "*.c", "*b*", "a*", "?", "a.?", "?.b", "[ab].*", "[!a]*",
		"{a,b}.c", "c.{a,b.*}", "a.[b-c]", `a\.b`, "**", "b.*.c",
	}
	propTags = []string{"t1", "t2", "t3"}
)

func randomType(r *rand.Rand) string {
	typ := propSegments[r.IntN(len(propSegments))]
	for range r.IntN(3) {
		typ += "." + propSegments[r.IntN(len(propSegments))]
	}
	return typ
}

func randomSubset[T any](r *rand.Rand, from []T) []T {
	var out []T
	for _, v := range from {
		if r.IntN(2) == 0 {
			out = append(out, v)
		}
	}
	return out
}

func randomFilter(r *rand.Rand) mcpe.Filter {
	for {
		var f mcpe.Filter
		if r.IntN(5) > 0 {
			for range 1 + r.IntN(3) {
				if r.IntN(2) == 0 {
					f.EventTypes = append(f.EventTypes, randomType(r))
				} else {
					f.EventTypes = append(f.EventTypes, propPatterns[r.IntN(len(propPatterns))])
				}
			}
		}
		if r.IntN(4) == 0 {
			f.Tags = randomSubset(r, propTags)
		}
		if r.IntN(4) == 0 {
			f.Priority = randomSubset(r, mcpe.Priorities)
		}
		if f.EventTypes != nil || len(f.Tags) > 0 || len(f.Priority) > 0 {
			// randomSubset returns nil, never an empty list.
			return f
		}
	}
}

func randomEvent(r *rand.Rand) *mcpe.Event {
	return testEvent(randomType(r), mcpe.Priorities[r.IntN(len(mcpe.Priorities))], randomSubset(r, propTags)...)
}

// TestIndexMatchesBruteForce routes random events through an index under
// random changes and compares every result with checking each matcher.
func TestIndexMatchesBruteForce(t *testing.T) {
	caches := slices.Concat(indexCacheOptions, []struct {
		name string
		opts *IndexOptions
	}{{"cache of 1", &IndexOptions{CacheSize: 1}}})
	for _, c := range caches {
		for seed := range uint64(10) {
			t.Run(fmt.Sprintf("%s/seed=%d", c.name, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 0x5eed))
				x := NewIndex(c.opts)
				entries := make(map[string]*Entry)
				for step := range 250 {
					id := fmt.Sprintf("s%d", r.IntN(40))
					switch op := r.IntN(10); {
					case op < 5:
						e := testEntry(t, id, randomFilter(r))
						entries[id] = e
						x.Put(e)
					case op < 7:
						delete(entries, id)
						x.Remove(id)
					default:
						// Routing without a change in between hits the cache.
					}
					for range 4 {
						ev := randomEvent(r)
						want, got := bruteForceIDs(entries, ev), matchIDs(t, x, ev)
						if !slices.Equal(want, got) {
							t.Fatalf("step %d, event %q %s %q: mismatch (-want +got):\n%s",
								step, ev.Type, ev.Metadata.Priority, ev.Metadata.Tags, cmp.Diff(want, got))
						}
					}
					if got := x.Len(); got != len(entries) {
						t.Fatalf("step %d: Len() = %d, want %d", step, got, len(entries))
					}
				}
			})
		}
	}
}

// TestIndexConcurrent routes events while other goroutines change the index.
// Run it with -race. The stable entries must always be found, and every
// result must be free of duplicates and match the event.
func TestIndexConcurrent(t *testing.T) {
	const (
		readers        = 4
		writers        = 2
		readIterations = 2000
		writeIters     = 500
	)
	for _, c := range indexCacheOptions {
		t.Run(c.name, func(t *testing.T) {
			x := NewIndex(c.opts)
			x.Put(testEntry(t, "stable-exact", mcpe.Filter{EventTypes: []string{"svc0.created"}}))
			x.Put(testEntry(t, "stable-pattern", mcpe.Filter{EventTypes: []string{"svc*.created", "svc0.*"}}))
			x.Put(testEntry(t, "stable-tags", mcpe.Filter{Tags: []string{"t1"}}))

			errs := make(chan error, readers+writers)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(w), 1))
					for i := range writeIters {
						id := fmt.Sprintf("churn-%d-%d", w, r.IntN(20))
						if i%3 == 2 {
							x.Remove(id)
							continue
						}
						e, err := NewEntry(&Subscription{Principal: "alice", Subscription: mcpe.Subscription{ID: id, Status: mcpe.StatusActive, Filter: randomFilter(r)}})
						if err != nil {
							errs <- err
							return
						}
						x.Put(e)
					}
				})
			}
			for rd := range readers {
				wg.Go(func() {
					for i := range readIterations {
						// A few types, more than the smallest cache holds.
						ev := testEvent(fmt.Sprintf("svc%d.created", (rd+i)%3), mcpe.PriorityNormal, "t1")
						got := x.Match(ev)
						seen := make(map[string]bool, len(got))
						for _, e := range got {
							if seen[e.ID] {
								errs <- fmt.Errorf("%s: %q returned twice", ev.Type, e.ID)
								return
							}
							seen[e.ID] = true
							if !e.matcher.Match(ev) {
								errs <- fmt.Errorf("%s: %q returned but does not match", ev.Type, e.ID)
								return
							}
						}
						want := []string{"stable-pattern", "stable-tags"}
						if ev.Type == "svc0.created" {
							want = append(want, "stable-exact")
						}
						for _, id := range want {
							if !seen[id] {
								errs <- fmt.Errorf("%s: stable entry %q missing", ev.Type, id)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// waitLimit bounds a wait for another goroutine; it is reached only when
// the code under test hangs.
const waitLimit = 10 * time.Second

// TestIndexWritersDoNotWaitForMatching checks that Put and Remove go ahead
// while a new type's patterns are being matched: matching runs outside the
// lock writers take.
func TestIndexWritersDoNotWaitForMatching(t *testing.T) {
	x := NewIndex(nil)
	x.Put(testEntry(t, "a", mcpe.Filter{EventTypes: []string{"svc.*"}}))
	matching, release := make(chan struct{}), make(chan struct{})
	x.beforeMatch = func() {
		close(matching)
		<-release
	}
	done := make(chan []string)
	go func() { done <- entryIDs(t, x.Match(testEvent("svc.created", ""))) }()
	<-matching
	wrote := make(chan struct{})
	go func() {
		x.Put(testEntry(t, "b", mcpe.Filter{EventTypes: []string{"svc.*"}}))
		x.Remove("a")
		close(wrote)
	}()
	select {
	case <-wrote:
	case <-time.After(waitLimit):
		t.Fatal("Put and Remove waited for a match in progress")
	}
	close(release)
	// The match in progress answers for the index as it was when it began,
	// and its stale result is not cached.
	if diff := cmp.Diff([]string{"a"}, <-done); diff != "" {
		t.Errorf("match in progress mismatch (-want +got):\n%s", diff)
	}
	x.beforeMatch = nil
	if diff := cmp.Diff([]string{"b"}, matchIDs(t, x, testEvent("svc.created", ""))); diff != "" {
		t.Errorf("match after the writes mismatch (-want +got):\n%s", diff)
	}
}

// TestIndexCacheAdmitsOnSecondMiss checks that a type is cached once it
// was missed twice: a stream of types each seen once leaves the cache to
// those that repeat.
func TestIndexCacheAdmitsOnSecondMiss(t *testing.T) {
	x := NewIndex(nil)
	x.Put(testEntry(t, "a", mcpe.Filter{EventTypes: []string{"svc.*"}}))
	for i := range 100 {
		matchIDs(t, x, testEvent(fmt.Sprintf("svc.once%d", i), ""))
	}
	if n := cacheLen(x); n != 0 {
		t.Errorf("%d types seen once are cached; want none", n)
	}
	matchIDs(t, x, testEvent("svc.once7", ""))
	if x.cache.get("svc.once7") == nil {
		t.Error("a type missed twice is not cached")
	}
}

// TestIndexChangeKeepsUnrelatedCachedTypes checks that a change drops from
// the cache only the types it can affect.
func TestIndexChangeKeepsUnrelatedCachedTypes(t *testing.T) {
	x := NewIndex(nil)
	x.Put(testEntry(t, "a", mcpe.Filter{EventTypes: []string{"svc.*"}}))
	x.Put(testEntry(t, "b", mcpe.Filter{EventTypes: []string{"other.*"}}))
	for range 2 { // cached on the second miss
		for _, typ := range []string{"svc.created", "svc.deleted", "other.created", "other.x.y"} {
			matchIDs(t, x, testEvent(typ, ""))
		}
	}
	x.Put(testEntry(t, "c", mcpe.Filter{EventTypes: []string{"svc.c*", "exact.type"}}))
	var cachedTypes []string
	for _, typ := range []string{"svc.created", "svc.deleted", "other.created", "other.x.y"} {
		if x.cache.get(typ) != nil {
			cachedTypes = append(cachedTypes, typ)
		}
	}
	if diff := cmp.Diff([]string{"svc.deleted", "other.created", "other.x.y"}, cachedTypes); diff != "" {
		t.Errorf("cached types after adding svc.c* mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "c"}, matchIDs(t, x, testEvent("svc.created", ""))); diff != "" {
		t.Errorf("svc.created mismatch (-want +got):\n%s", diff)
	}
	x.Remove("b")
	if x.cache.get("other.created") != nil || x.cache.get("svc.deleted") == nil {
		t.Error("removing other.* did not drop exactly the other.* types")
	}
}

// TestIndexCacheEntriesBound checks that the cache bounds the entries its
// results list together, not only the number of types.
func TestIndexCacheEntriesBound(t *testing.T) {
	x := NewIndex(nil)
	x.cache = newTypeCache(DefaultIndexCacheSize, 10)
	for i := range 4 {
		x.Put(testEntry(t, fmt.Sprint(i), mcpe.Filter{EventTypes: []string{"svc.*"}}))
	}
	for i := range 20 {
		matchIDs(t, x, testEvent(fmt.Sprintf("svc.e%d", i), ""))
		if x.cache.entries > 10 {
			t.Fatalf("after %d types the cached results list %d entries, over the bound of 10", i+1, x.cache.entries)
		}
	}
	for i := range 20 {
		x.Put(testEntry(t, fmt.Sprintf("x%d", i), mcpe.Filter{EventTypes: []string{"svc.*"}}))
	}
	matchIDs(t, x, testEvent("svc.big", ""))
	if x.cache.get("svc.big") != nil {
		t.Error("a result larger than the whole bound was cached")
	}
}
