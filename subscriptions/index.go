package subscriptions

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// DefaultIndexCacheSize is how many event types Index remembers the matches
// of when IndexOptions.CacheSize is zero.
const DefaultIndexCacheSize = 4096

// Entry is a subscription as the index sees it.
type Entry struct {
	// ID is the subscription ID.
	ID string
	// Principal owns the subscription.
	Principal string
	// Delivery is how matching events reach the owner.
	Delivery mcpe.Delivery
	matcher  *Matcher
}

// NewEntry compiles the filter of sub into an index entry.
func NewEntry(sub *Subscription) (*Entry, error) {
	m, err := CompileFilter(sub.Filter)
	if err != nil {
		return nil, err
	}
	return &Entry{ID: sub.ID, Principal: sub.Principal, Delivery: sub.Delivery, matcher: m}, nil
}

// Index finds the subscriptions an event matches. Exact types are looked up in
// a map; patterns are bucketed by their literal prefix, so an event is tested
// only against the patterns whose prefix it starts with, and each distinct
// pattern once however many subscriptions share it. On top sits a bounded
// cache from event type to result, as in the NATS sublist: a hit costs two map
// look-ups whatever the number of subscriptions. Index is safe for concurrent
// use.
type Index struct {
	mu       sync.RWMutex
	entries  map[string]*Entry
	exact    map[string]*entryList
	patterns map[string]map[string]*patternBucket // prefix -> pattern text -> bucket
	prefixes []prefixLen                          // distinct prefix lengths, ascending

	cacheSize int
	cache     atomic.Pointer[typeCache]
}

// entryList holds the entries of one exact type or one pattern, with counts
// that let a lookup combine lists without visiting each entry.
type entryList struct {
	entries []*Entry
	// restricted counts entries with a tag or priority part.
	restricted int
	// multi counts entries with more than one pattern, which may appear in
	// several lists.
	multi int
}

func (l *entryList) add(e *Entry) {
	l.entries = append(l.entries, e)
	l.count(e, 1)
}

func (l *entryList) remove(e *Entry) {
	if i := slices.Index(l.entries, e); i >= 0 {
		// Cached results are copies, never views of a list, so editing in
		// place is safe.
		l.entries = slices.Delete(l.entries, i, i+1)
		l.count(e, -1)
	}
}

func (l *entryList) count(e *Entry, d int) {
	if !e.matcher.typeOnly() {
		l.restricted += d
	}
	if len(e.matcher.patterns) > 1 {
		l.multi += d
	}
}

type patternBucket struct {
	pattern Pattern
	entryList
}

type prefixLen struct {
	n    int // length of the prefix
	refs int // patterns with a prefix of that length
}

type typeCache struct {
	m sync.Map // event type -> *cached
	n atomic.Int64
}

type cached struct {
	entries []*Entry
	// typeOnly is true when no entry has a tag or priority part, so the
	// entries are the final result.
	typeOnly bool
}

// IndexOptions configure an Index. The zero value is ready to use.
type IndexOptions struct {
	// CacheSize bounds the result cache, in event types. Zero means
	// DefaultIndexCacheSize; negative disables the cache.
	CacheSize int
}

// NewIndex returns an empty index. opts may be nil.
func NewIndex(opts *IndexOptions) *Index {
	x := &Index{
		entries:   make(map[string]*Entry),
		exact:     make(map[string]*entryList),
		patterns:  make(map[string]map[string]*patternBucket),
		cacheSize: DefaultIndexCacheSize,
	}
	if opts != nil && opts.CacheSize != 0 {
		x.cacheSize = opts.CacheSize
	}
	x.cache.Store(&typeCache{})
	return x
}

// Len returns the number of subscriptions in the index.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.entries)
}

// Put adds e, replacing any entry with the same ID.
func (x *Index) Put(e *Entry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(e.ID)
	x.entries[e.ID] = e
	patterns := e.matcher.patterns
	if len(patterns) == 0 {
		patterns = []Pattern{matchAll}
	}
	for _, p := range patterns {
		if p.Exact() {
			l := x.exact[p.String()]
			if l == nil {
				l = &entryList{}
				x.exact[p.String()] = l
			}
			l.add(e)
			continue
		}
		byText := x.patterns[p.Prefix()]
		if byText == nil {
			byText = make(map[string]*patternBucket)
			x.patterns[p.Prefix()] = byText
		}
		b := byText[p.String()]
		if b == nil {
			b = &patternBucket{pattern: p}
			byText[p.String()] = b
			x.addPrefixLen(len(p.Prefix()))
		}
		b.add(e)
	}
	x.resetCacheLocked()
}

// Remove deletes the entry with the given ID, if present.
func (x *Index) Remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.removeLocked(id) {
		x.resetCacheLocked()
	}
}

func (x *Index) removeLocked(id string) bool {
	e, ok := x.entries[id]
	if !ok {
		return false
	}
	delete(x.entries, id)
	patterns := e.matcher.patterns
	if len(patterns) == 0 {
		patterns = []Pattern{matchAll}
	}
	for _, p := range patterns {
		if p.Exact() {
			if l := x.exact[p.String()]; l != nil {
				if l.remove(e); len(l.entries) == 0 {
					delete(x.exact, p.String())
				}
			}
			continue
		}
		byText := x.patterns[p.Prefix()]
		b := byText[p.String()]
		if b == nil {
			continue
		}
		if b.remove(e); len(b.entries) == 0 {
			delete(byText, p.String())
			x.removePrefixLen(len(p.Prefix()))
			if len(byText) == 0 {
				delete(x.patterns, p.Prefix())
			}
		}
	}
	return true
}

func (x *Index) addPrefixLen(n int) {
	i := sort.Search(len(x.prefixes), func(i int) bool { return x.prefixes[i].n >= n })
	if i < len(x.prefixes) && x.prefixes[i].n == n {
		x.prefixes[i].refs++
		return
	}
	x.prefixes = slices.Insert(x.prefixes, i, prefixLen{n: n, refs: 1})
}

func (x *Index) removePrefixLen(n int) {
	i := sort.Search(len(x.prefixes), func(i int) bool { return x.prefixes[i].n >= n })
	if i < len(x.prefixes) && x.prefixes[i].n == n {
		if x.prefixes[i].refs--; x.prefixes[i].refs == 0 {
			x.prefixes = slices.Delete(x.prefixes, i, i+1)
		}
	}
}

func (x *Index) resetCacheLocked() {
	if x.cache.Load().n.Load() > 0 {
		x.cache.Store(&typeCache{})
	}
}

// Match returns the entries whose whole filter matches ev. The returned slice
// may be shared with later calls and must not be modified.
func (x *Index) Match(ev *mcpe.Event) []*Entry {
	x.mu.RLock()
	defer x.mu.RUnlock()
	c := x.byTypeLocked(ev.Type)
	if c.typeOnly {
		return c.entries
	}
	var out []*Entry
	for _, e := range c.entries {
		if e.matcher.matchRest(ev) {
			out = append(out, e)
		}
	}
	return out
}

// byTypeLocked returns the entries whose eventTypes match t, from the cache
// when it can. Callers hold at least the read lock, which keeps writers from
// replacing the cache while a result computed from the old state is stored.
func (x *Index) byTypeLocked(t string) *cached {
	tc := x.cache.Load()
	if x.cacheSize > 0 {
		if v, ok := tc.m.Load(t); ok {
			return v.(*cached)
		}
	}
	c := x.computeLocked(t)
	if x.cacheSize > 0 {
		if tc.n.Add(1) > int64(x.cacheSize) {
			// Full: start a new generation rather than track recency. The
			// cache refills with the types that are actually hot.
			fresh := &typeCache{}
			if x.cache.CompareAndSwap(tc, fresh) {
				tc = fresh
				tc.n.Add(1)
			}
		}
		tc.m.Store(t, c)
	}
	return c
}

func (x *Index) computeLocked(t string) *cached {
	// Gather the matching lists first, then copy their entries in one go.
	var lists [8]*entryList
	matched := lists[:0]
	if l := x.exact[t]; l != nil {
		matched = append(matched, l)
	}
	for _, pl := range x.prefixes {
		if pl.n > len(t) {
			break
		}
		for _, b := range x.patterns[t[:pl.n]] {
			if b.pattern.Match(t) {
				matched = append(matched, &b.entryList)
			}
		}
	}
	c := &cached{typeOnly: true}
	n, multi := 0, 0
	for _, l := range matched {
		n += len(l.entries)
		multi += l.multi
		if l.restricted > 0 {
			c.typeOnly = false
		}
	}
	if n == 0 {
		return c
	}
	out := make([]*Entry, 0, n)
	for _, l := range matched {
		out = append(out, l.entries...)
	}
	if multi > 0 && len(matched) > 1 {
		// A subscription with several patterns may have matched more than
		// once; keep its first appearance.
		seen := make(map[*Entry]struct{}, len(out))
		kept := out[:0]
		for _, e := range out {
			if _, dup := seen[e]; !dup {
				seen[e] = struct{}{}
				kept = append(kept, e)
			}
		}
		out = kept
	}
	c.entries = out
	return c
}

// matchAll stands for a filter without eventTypes: it matches any type.
var matchAll = func() Pattern {
	p, err := CompilePattern("*")
	if err != nil {
		panic(err)
	}
	return p
}()
