package subscriptions

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Defaults of IndexOptions.
const (
	// DefaultIndexCacheSize is how many event types Index remembers the
	// matches of.
	DefaultIndexCacheSize = 4096
	// DefaultIndexCacheEntries bounds the subscriptions listed in all the
	// remembered results together, so that the cache's memory is bounded
	// whatever the number of subscriptions each type matches.
	DefaultIndexCacheEntries = 1 << 20
)

// Entry is a subscription as the index sees it.
type Entry struct {
	// ID is the subscription ID.
	ID string
	// Principal owns the subscription.
	Principal string
	// Delivery is how matching events reach the owner, and Label the
	// name the owner gave the subscription.
	Delivery mcpe.Delivery
	Label    string
	matcher  *Matcher
	// cost is the sum of its patterns' costs (mcpe.Pattern.Cost) and of
	// its where condition's.
	cost int
	// updated and filter are the subscription's UpdatedAt and Filter:
	// which version of it the entry is (two changes can share a time).
	updated time.Time
	filter  mcpe.Filter
}

// NewEntry compiles the filter of sub into an index entry.
func NewEntry(sub *Subscription) (*Entry, error) {
	m, err := CompileFilter(sub.Filter)
	if err != nil {
		return nil, err
	}
	e := &Entry{ID: sub.ID, Principal: sub.Principal, Delivery: sub.Delivery, Label: sub.Label, matcher: m, updated: sub.UpdatedAt, filter: sub.Filter}
	for _, p := range m.patterns {
		e.cost += p.Cost()
	}
	e.cost += m.whereCost
	return e, nil
}

// Index finds the subscriptions an event matches. Exact types are looked up in
// a map; patterns are bucketed by their literal prefix, so an event is tested
// only against the patterns whose prefix it starts with, and each distinct
// pattern once however many subscriptions share it. On top sits a bounded
// cache from event type to result, as in the NATS sublist: a hit costs a map
// look-up whatever the number of subscriptions.
//
// Matching a type the cache does not hold reads the buckets under a read
// lock but runs the patterns after releasing it: the entry lists are never
// changed in place, so a writer (Put, Remove) waits only for those reads,
// never for pattern matching. A change drops from the cache only the types
// it can affect. Index is safe for concurrent use.
type Index struct {
	mu       sync.RWMutex
	entries  map[string]*Entry
	exact    map[string]*entryList
	patterns map[string]map[string]*patternBucket // prefix -> pattern text -> bucket
	prefixes []prefixLen                          // distinct prefix lengths, ascending
	// costs are, by principal, its entries, the patterns they use and
	// what matching them costs: each distinct pattern is matched once.
	costs map[string]*patternUses
	// gen counts changes; a result computed before a change is not cached.
	gen atomic.Uint64

	cache *typeCache // nil when disabled
	// beforeMatch, when set (by tests), runs after the candidates of a type
	// are read and before its patterns run.
	beforeMatch func()
}

// entryList holds the entries of one exact type or one pattern, with counts
// that let a lookup combine lists without visiting each entry. entries is
// replaced, never changed in place, so a reader may keep it.
type entryList struct {
	entries []*Entry
	// restricted counts entries with a tag or priority part.
	restricted int
	// multi counts entries with more than one pattern, which may appear in
	// several lists.
	multi int
}

func (l *entryList) add(e *Entry) {
	l.entries = append(slices.Clip(l.entries), e)
	l.count(e, 1)
}

func (l *entryList) remove(e *Entry) {
	if i := slices.Index(l.entries, e); i >= 0 {
		l.entries = slices.Delete(slices.Clone(l.entries), i, i+1)
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
	var o IndexOptions
	if opts != nil {
		o = *opts
	}
	o.CacheSize = cmp.Or(o.CacheSize, DefaultIndexCacheSize)
	x := &Index{
		entries:  make(map[string]*Entry),
		exact:    make(map[string]*entryList),
		patterns: make(map[string]map[string]*patternBucket),
		costs:    make(map[string]*patternUses),
	}
	if o.CacheSize > 0 {
		x.cache = newTypeCache(o.CacheSize, DefaultIndexCacheEntries)
	}
	return x
}

// Len returns the number of subscriptions in the index.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.entries)
}

// patternUses counts the entries of one principal, those that use each of
// its patterns, and the summed cost of the distinct ones.
type patternUses struct {
	entries int
	uses    map[string]int
	cost    int
}

func (u *patternUses) add(e *Entry, d int) {
	u.entries += d
	u.cost += d * e.matcher.whereCost
	for _, p := range e.patterns() {
		if p.Exact() {
			continue
		}
		before := u.uses[p.String()]
		switch after := before + d; {
		case after == 0:
			delete(u.uses, p.String())
			u.cost -= p.Cost()
		default:
			u.uses[p.String()] = after
			if before == 0 {
				u.cost += p.Cost()
			}
		}
	}
}

// Owned returns how many entries the principals starting with prefix own.
func (x *Index) Owned(prefix string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := 0
	for p, u := range x.costs {
		if strings.HasPrefix(p, prefix) {
			n += u.entries
		}
	}
	return n
}

// CostWith returns what principal's patterns and where conditions would
// cost with entry in the index in place of old (nil for none).
func (x *Index) CostWith(principal string, old, entry *Entry) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	u := x.costs[principal]
	if u == nil {
		u = &patternUses{}
	}
	cost := u.cost + entry.matcher.whereCost
	usedByOld := make(map[string]bool)
	if old != nil {
		cost -= old.matcher.whereCost
		for _, p := range old.patterns() {
			if !p.Exact() {
				usedByOld[p.String()] = true
				if u.uses[p.String()] == 1 {
					cost -= p.Cost()
				}
			}
		}
	}
	for _, p := range entry.patterns() {
		n := u.uses[p.String()]
		if usedByOld[p.String()] {
			n--
		}
		if !p.Exact() && n == 0 {
			cost += p.Cost()
		}
	}
	return cost
}

// Generation counts the changes made to the index so far.
func (x *Index) Generation() uint64 { return x.gen.Load() }

// Recheck brings a result of Match for ev up to date with the changes made
// since: it leaves out the entries removed, and replaces those changed by
// their new version when it still matches. Entries added since are not
// looked for.
func (x *Index) Recheck(matched []*Entry, ev *mcpe.Event) []*Entry {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]*Entry, 0, len(matched))
	for _, e := range matched {
		switch cur := x.entries[e.ID]; {
		case cur == e:
			out = append(out, e)
		case cur != nil && cur.matcher.Match(ev):
			out = append(out, cur)
		}
	}
	return out
}

// IDs returns the IDs of the subscriptions in the index.
func (x *Index) IDs() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return slices.Collect(maps.Keys(x.entries))
}

// Get returns the entry with the given ID, or nil.
func (x *Index) Get(id string) *Entry {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.entries[id]
}

// Put adds e, replacing any entry with the same ID.
func (x *Index) Put(e *Entry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.gen.Add(1)
	x.removeLocked(e.ID)
	x.entries[e.ID] = e
	u := x.costs[e.Principal]
	if u == nil {
		u = &patternUses{uses: make(map[string]int)}
		x.costs[e.Principal] = u
	}
	u.add(e, 1)
	for _, p := range e.patterns() {
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
	x.forgetLocked(e)
}

// Remove deletes the entry with the given ID, if present.
func (x *Index) Remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.gen.Add(1)
	x.removeLocked(id)
}

func (x *Index) removeLocked(id string) {
	e, ok := x.entries[id]
	if !ok {
		return
	}
	delete(x.entries, id)
	if u := x.costs[e.Principal]; u != nil {
		if u.add(e, -1); u.entries == 0 {
			delete(x.costs, e.Principal)
		}
	}
	for _, p := range e.patterns() {
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
	x.forgetLocked(e)
}

// patterns returns the entry's patterns; a filter without eventTypes
// matches any type.
func (e *Entry) patterns() []Pattern {
	if len(e.matcher.patterns) == 0 {
		return []Pattern{matchAll}
	}
	return e.matcher.patterns
}

// forgetLocked drops from the cache the types e's patterns match: the only
// results its addition or removal changes.
func (x *Index) forgetLocked(e *Entry) {
	if x.cache != nil {
		x.cache.forget(e.patterns())
	}
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

// Match returns the entries whose whole filter matches ev. The returned slice
// may be shared with later calls and must not be modified.
func (x *Index) Match(ev *mcpe.Event) []*Entry {
	c := x.byType(ev.Type)
	if c.typeOnly {
		return c.entries
	}
	var out []*Entry
	v := &eventVars{ev: ev}
	for _, e := range c.entries {
		if e.matcher.matchRest(v) {
			out = append(out, e)
		}
	}
	return out
}

// byType returns the entries whose eventTypes match t, from the cache when
// it can.
func (x *Index) byType(t string) *cached {
	if x.cache != nil {
		if c := x.cache.get(t); c != nil {
			return c
		}
	}
	gen, exact, candidates := x.candidates(t)
	if x.beforeMatch != nil {
		x.beforeMatch()
	}
	c := compute(t, exact, candidates)
	if x.cache != nil {
		x.cache.put(t, c, func() bool { return x.gen.Load() == gen })
	}
	return c
}

// candidates reads, under the read lock, the entries of exact type t and
// the pattern buckets whose prefix t starts with, and the generation they
// belong to.
func (x *Index) candidates(t string) (gen uint64, exact *entryList, buckets []patternBucket) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	gen = x.gen.Load()
	if l := x.exact[t]; l != nil {
		cp := *l
		exact = &cp
	}
	for _, pl := range x.prefixes {
		if pl.n > len(t) {
			break
		}
		for _, b := range x.patterns[t[:pl.n]] {
			buckets = append(buckets, *b)
		}
	}
	return gen, exact, buckets
}

// compute matches t against the candidate buckets, outside any lock, and
// joins the lists that match.
func compute(t string, exact *entryList, buckets []patternBucket) *cached {
	var lists [8]*entryList
	matched := lists[:0]
	if exact != nil {
		matched = append(matched, exact)
	}
	for i := range buckets {
		if buckets[i].pattern.Match(t) {
			matched = append(matched, &buckets[i].entryList)
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

// typeCache remembers results by event type, within a bound on the number
// of types and one on the entries they list together. Types are also
// grouped by their first segment, so that a pattern finds the cached types
// it may match by its literal prefix without looking at the others.
type typeCache struct {
	maxTypes, maxEntries int

	mu      sync.RWMutex
	m       map[string]*cached
	byFirst map[string]map[string]struct{} // the keys of m by first segment
	entries int                            // listed by the results in m

	// missed holds the types missed once lately: a type is cached on its
	// second miss. Types seen once (a stream of distinct types) would only
	// push the others out and cost their upkeep.
	missedMu sync.Mutex
	missed   map[string]struct{}
}

// maxMissed bounds the types missed once that the cache remembers.
const maxMissed = 4096

// admit reports whether t was missed lately, and remembers it otherwise.
func (c *typeCache) admit(t string) bool {
	c.missedMu.Lock()
	defer c.missedMu.Unlock()
	if _, ok := c.missed[t]; ok {
		delete(c.missed, t)
		return true
	}
	if len(c.missed) >= maxMissed {
		clear(c.missed)
	}
	c.missed[t] = struct{}{}
	return false
}

func newTypeCache(maxTypes, maxEntries int) *typeCache {
	return &typeCache{maxTypes: maxTypes, maxEntries: maxEntries, m: make(map[string]*cached), byFirst: make(map[string]map[string]struct{}), missed: make(map[string]struct{})}
}

func (c *typeCache) get(t string) *cached {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[t]
}

// firstSegment returns what precedes the first dot of t, and whether t
// has one.
func firstSegment(t string) (string, bool) {
	if i := strings.IndexByte(t, '.'); i >= 0 {
		return t[:i], true
	}
	return t, false
}

// put remembers r for t, if t was missed lately too, and if current still
// reports true once the lock is held: a change since r was computed makes
// it stale. When full, the cache starts over rather than track recency; it
// refills with the types that are actually hot.
func (c *typeCache) put(t string, r *cached, current func() bool) {
	if len(r.entries) > c.maxEntries || !c.admit(t) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !current() {
		return
	}
	if _, ok := c.m[t]; ok {
		return
	}
	if len(c.m) >= c.maxTypes || c.entries+len(r.entries) > c.maxEntries {
		c.clearLocked()
	}
	c.m[t] = r
	c.entries += len(r.entries)
	first, _ := firstSegment(t)
	group := c.byFirst[first]
	if group == nil {
		group = make(map[string]struct{})
		c.byFirst[first] = group
	}
	group[t] = struct{}{}
}

func (c *typeCache) clearLocked() {
	clear(c.m)
	clear(c.byFirst)
	c.entries = 0
}

// forgetWork bounds the pattern matching one change may do to find the
// cached types it affects (types to test times pattern cost); past it the
// whole cache is dropped, which costs less.
const forgetWork = 4096

// forget drops the cached types that any of patterns matches.
func (c *typeCache) forget(patterns []Pattern) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range patterns {
		if p.Exact() {
			c.dropLocked(p.String())
			continue
		}
		// The groups whose types may start with the prefix: one when the
		// prefix holds a whole first segment, else those whose first
		// segment starts with it.
		prefix := p.Prefix()
		var groups []map[string]struct{}
		if first, whole := firstSegment(prefix); whole {
			if g := c.byFirst[first]; g != nil {
				groups = append(groups, g)
			}
		} else {
			for first, g := range c.byFirst {
				if strings.HasPrefix(first, prefix) {
					groups = append(groups, g)
				}
			}
		}
		n := 0
		for _, g := range groups {
			n += len(g)
		}
		if n*(1+p.Cost()) > forgetWork {
			c.clearLocked()
			return
		}
		var drop []string
		for _, g := range groups {
			for t := range g {
				if strings.HasPrefix(t, prefix) && p.Match(t) {
					drop = append(drop, t)
				}
			}
		}
		for _, t := range drop {
			c.dropLocked(t)
		}
	}
}

func (c *typeCache) dropLocked(t string) {
	r, ok := c.m[t]
	if !ok {
		return
	}
	delete(c.m, t)
	c.entries -= len(r.entries)
	first, _ := firstSegment(t)
	if g := c.byFirst[first]; g != nil {
		delete(g, t)
		if len(g) == 0 {
			delete(c.byFirst, first)
		}
	}
}

// matchAll stands for a filter without eventTypes: it matches any type.
var matchAll = func() Pattern {
	p, err := CompilePattern("*")
	if err != nil {
		panic(err)
	}
	return p
}()
