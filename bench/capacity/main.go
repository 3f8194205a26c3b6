// Command capacity simulates servers of mcpe-server sharing one PostgreSQL
// database, event by event, from costs measured on the real binary, to
// answer what the e2e bench cannot run on one machine: how many servers and
// database cores a load needs, and which resource runs out first.
//
// What it models, each from a measurement (docs/performance.md, "Capacity
// model"):
//
//   - a post costs its server -server-event of CPU; the server gathers the
//     posts that arrive while its previous commit is under way into one
//     group commit (at most 256), which costs the server -server-commit;
//   - a commit costs the database -db-commit plus -db-event per event and
//     -db-row per inbox row, holding the rows of its principals (their
//     counters number the inbox) from before that work until its WAL is on
//     disk (-flush); PostgreSQL's NOTIFY lock, which every transaction that
//     notifies takes at commit, is held from then until the flush too;
//   - a commit that waited for its rows more than -gather-after makes its
//     server's next take them in a round trip of its own (-server-trip and
//     -db-trip), then add the posts queued meanwhile for those rows only;
//     one to which none came ends it;
//   - each notifying commit wakes every server's listening backend
//     (-db-listener each), and a server holding a session of a principal
//     written by another server reads the entries back: -db-wake of the
//     database and -server-wake of its own per wake (wakes that arrive
//     while it reads are folded into its next read);
//   - delivering costs the session's server -server-note per principal an
//     event reaches (already in -server-event for the first);
//   - an idle session costs -heartbeat of CPU per second.
//
// CPU is a pool of cores serving work first come first served. With
// -shared-cores every server, the database and the bench's posters share
// one pool, as on the machine the e2e bench runs on (the bench's posters
// and client then cost -bench-event per event); that reproduces the bench
// and checks the model. Without it each server has -server-cores and the
// database -db-cores.
//
// Posters are either closed loop (-posters: each posts, waits for its
// answer, posts again, spread over the servers as the e2e bench does) or
// an open stream of -rate events per second at random moments (Poisson),
// each to a random server.
//
// It prints one JSON line: events accepted per second, CPU per event of the
// servers and of the database, each pool's and lock's use, events per
// commit, and the time from post to answer and from post to delivery.
//
//	go run ./bench/capacity -shared-cores 2 -servers 3 -posters 16
//	go run ./bench/capacity -servers 8 -server-cores 4 -db-cores 8 -rate 5000 -principals 100000 -reach 10 -sessions 100000
package main

import (
	"container/heap"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
)

// Params are a deployment and its load; times in microseconds.
type Params struct {
	Servers, ServerCores, DBCores, SharedCores int
	Posters                                    int
	Rate                                       float64 // events per second, open loop (with Posters 0)
	Principals, Reach                          int     // an event reaches Reach of Principals
	Sessions                                   int     // idle sessions, spread over the servers
	BatchRows                                  int     // bound on a group commit's inbox rows (0: 256 events only)
	GatherAfter, ServerTrip, DBTrip            float64 // gathering while waiting for rows (GatherAfter 0: never)
	ServerEvent, ServerCommit, ServerWake      float64
	ServerNote, BenchEvent                     float64
	DBEvent, DBCommit, DBRow, DBListener       float64
	DBWake, Flush, Heartbeat                   float64
	Warmup, Measure                            float64 // simulated seconds
	Seed                                       uint64
}

// Result is what one simulation saw in its measured window.
type Result struct {
	Params
	Accepted        float64 `json:"acceptedPerSecond"`
	ServerCPU       float64 `json:"serverCPUMicrosPerEvent"`
	DBCPU           float64 `json:"dbCPUMicrosPerEvent"`
	ServerUse       float64 `json:"serverCoresUsed"` // mean over the servers' pools
	DBUse           float64 `json:"dbCoresUsed"`
	NotifyLockUse   float64 `json:"notifyLockHeld"` // fraction of the time
	RowLockUse      float64 `json:"busiestRowHeld"`
	EventsPerCommit float64 `json:"eventsPerCommit"`
	AnswerP50       float64 `json:"answerP50ms"`
	AnswerP99       float64 `json:"answerP99ms"`
	DeliverP50      float64 `json:"deliveryP50ms"`
	DeliverP99      float64 `json:"deliveryP99ms"`
	Backlog         int     `json:"postsWaitingAtEnd"`
}

// sim is a clock and the work scheduled on it.
type sim struct {
	now float64
	q   timeline
	n   uint64
	rng *rand.Rand
}

type step struct {
	t   float64
	n   uint64
	run func()
}

type timeline []step

func (t timeline) Len() int { return len(t) }
func (t timeline) Less(i, j int) bool {
	return t[i].t < t[j].t || t[i].t == t[j].t && t[i].n < t[j].n
}
func (t timeline) Swap(i, j int) { t[i], t[j] = t[j], t[i] }
func (t *timeline) Push(x any)   { *t = append(*t, x.(step)) }
func (t *timeline) Pop() any {
	old := *t
	s := old[len(old)-1]
	*t = old[:len(old)-1]
	return s
}

// after runs f d microseconds from now.
func (s *sim) after(d float64, f func()) {
	s.n++
	heap.Push(&s.q, step{s.now + d, s.n, f})
}

// runUntil runs the steps due by end (microseconds).
func (s *sim) runUntil(end float64) {
	for len(s.q) > 0 && s.q[0].t <= end {
		st := heap.Pop(&s.q).(step)
		s.now = st.t
		st.run()
	}
	s.now = end
}

// cpu is cores serving work first come first served.
type cpu struct {
	s     *sim
	cores int
	busy  int
	wait  []job
}

type job struct {
	d    float64
	done func()
}

func (c *cpu) do(d float64, done func()) {
	if c.busy == c.cores {
		c.wait = append(c.wait, job{d, done})
		return
	}
	c.busy++
	c.start(job{d, done})
}

func (c *cpu) start(j job) {
	c.s.after(j.d, func() {
		if len(c.wait) > 0 {
			next := c.wait[0]
			c.wait = c.wait[1:]
			c.start(next)
		} else {
			c.busy--
		}
		j.done()
	})
}

// lock is held by one at a time, handed over in the order asked; held sums
// the time it was held.
type lock struct {
	s     *sim
	taken bool
	since float64
	wait  []func()
	held  float64
}

func (l *lock) acquire(f func()) {
	if l.taken {
		l.wait = append(l.wait, f)
		return
	}
	l.taken, l.since = true, l.s.now
	f()
}

func (l *lock) release() {
	l.held += l.s.now - l.since
	l.since = l.s.now
	if len(l.wait) == 0 {
		l.taken = false
		return
	}
	f := l.wait[0]
	l.wait = l.wait[1:]
	l.s.after(0, f)
}

// acquireAll takes locks in order (a publish takes its principals' rows
// sorted), then runs f.
func acquireAll(locks []*lock, f func()) {
	if len(locks) == 0 {
		f()
		return
	}
	locks[0].acquire(func() { acquireAll(locks[1:], f) })
}

// event is one post.
type event struct {
	posted, answered float64
	principals       []int
	poster           int // -1 in an open stream
	pending          int // sessions' servers yet to deliver it
}

type server struct {
	id        int
	cpu       *cpu
	queue     []*event
	inCommit  bool
	gather    bool // the last commit waited for its rows
	unread    []*event
	following bool
}

type model struct {
	p       Params
	s       *sim
	servers []*server
	db      *cpu
	bench   *cpu
	rows    []*lock
	notify  *lock
	// measured window
	from, to                     float64
	accepted, commits, committed int
	answers, deliveries          []float64
	srvWork, dbWork              float64 // CPU charged in the window
}

// onServer and onDB run work of d µs on a server's or the database's
// cores, then f.
func (m *model) onServer(srv *server, d float64, f func()) {
	if m.measuring() {
		m.srvWork += d
	}
	srv.cpu.do(d, f)
}

func (m *model) onDB(d float64, f func()) {
	if m.measuring() {
		m.dbWork += d
	}
	m.db.do(d, f)
}

// home is the server that holds principal's session: the last for a
// single principal (as in the e2e bench), else spread evenly.
func (m *model) home(principal int) int {
	if m.p.Principals == 1 {
		return len(m.servers) - 1
	}
	return principal % len(m.servers)
}

func (m *model) measuring() bool { return m.s.now >= m.from && m.s.now < m.to }

func (m *model) post(srv *server, e *event) {
	m.onServer(srv, m.p.ServerEvent, func() {
		srv.queue = append(srv.queue, e)
		if !srv.inCommit {
			m.commit(srv)
		}
	})
}

func (m *model) commit(srv *server) {
	n, rows := 0, 0
	for n < min(len(srv.queue), 256) && (n == 0 || m.p.BatchRows == 0 || rows+len(srv.queue[n].principals) <= m.p.BatchRows) {
		rows += len(srv.queue[n].principals)
		n++
	}
	batch := slices.Clone(srv.queue[:n])
	srv.queue = srv.queue[n:]
	srv.inCommit = true
	var principals []int
	for _, e := range batch {
		principals = append(principals, e.principals...)
	}
	sort.Ints(principals)
	principals = slices.Compact(principals)
	locks := make([]*lock, len(principals))
	for i, p := range principals {
		locks[i] = m.rows[p]
	}
	// Half of what a commit costs regardless of its size is the protocol
	// and the transaction's own start and end, outside the rows; half is
	// the statements that run holding them. The server prepares the batch
	// (half of its part) before, and answers and hands over (the other
	// half) after, while its next batch is already under way.
	write := func() {
		rows := -len(batch) // the first of each event's rows is in DBEvent
		for _, e := range batch {
			rows += len(e.principals)
		}
		m.onDB(m.p.DBCommit/2+m.p.DBEvent*float64(len(batch))+m.p.DBRow*float64(rows), func() {
			m.notify.acquire(func() {
				m.s.after(m.p.Flush, func() {
					m.notify.release()
					for _, l := range locks {
						l.release()
					}
					m.committed1(srv, batch)
				})
			})
		})
	}
	m.onServer(srv, m.p.ServerCommit/2, func() {
		m.onDB(m.p.DBCommit/2, func() {
			asked, gather := m.s.now, srv.gather
			acquireAll(locks, func() {
				waited := m.p.GatherAfter > 0 && m.s.now-asked > m.p.GatherAfter
				if !gather {
					srv.gather = waited
					write()
					return
				}
				m.onDB(m.p.DBTrip/2, func() {
					m.onServer(srv, m.p.ServerTrip, func() {
						n := len(batch)
						batch = append(batch, m.joining(srv, principals, 256-n)...)
						srv.gather = waited && len(batch) > n
						m.onDB(m.p.DBTrip/2, write)
					})
				})
			})
		})
	})
}

// joining takes from srv's queue, up to room, the posts whose principals
// are all among held (sorted).
func (m *model) joining(srv *server, held []int, room int) (out []*event) {
	kept := srv.queue[:0]
	for _, e := range srv.queue {
		if len(out) < room && !slices.ContainsFunc(e.principals, func(p int) bool {
			_, found := slices.BinarySearch(held, p)
			return !found
		}) {
			out = append(out, e)
			continue
		}
		kept = append(kept, e)
	}
	clear(srv.queue[len(kept):])
	srv.queue = kept
	return out
}

// committed1 starts the next batch, answers this one's posters and wakes
// the servers of its principals' sessions.
func (m *model) committed1(srv *server, batch []*event) {
	if m.measuring() {
		m.commits++
		m.committed += len(batch)
	}
	if len(srv.queue) > 0 {
		m.commit(srv)
	} else {
		srv.inCommit = false
	}
	m.onDB(m.p.DBListener*float64(len(m.servers)), func() {})
	m.onServer(srv, m.p.ServerCommit/2, func() { m.answer(srv, batch) })
}

func (m *model) answer(srv *server, batch []*event) {
	woken := map[int]bool{}
	for _, e := range batch {
		e.answered = m.s.now
		if m.measuring() {
			m.accepted++
			m.answers = append(m.answers, e.answered-e.posted)
		}
		if e.poster >= 0 {
			poster := e.poster
			m.bench.do(m.p.BenchEvent, func() { m.postFrom(poster) })
		}
		e.pending = len(e.principals)
		for _, p := range e.principals {
			h := m.servers[m.home(p)]
			if h == srv {
				m.onServer(h, m.p.ServerNote, func() { m.delivered(e) })
				continue
			}
			h.unread = append(h.unread, e)
			woken[h.id] = true
		}
	}
	for id := range m.servers {
		if woken[id] && !m.servers[id].following {
			m.follow(m.servers[id])
		}
	}
}

// follow reads back what other servers wrote for this server's sessions.
func (m *model) follow(srv *server) {
	read := srv.unread
	srv.unread = nil
	srv.following = true
	m.onDB(m.p.DBWake, func() {
		m.onServer(srv, m.p.ServerWake+m.p.ServerNote*float64(len(read)), func() {
			for _, e := range read {
				m.delivered(e)
			}
			srv.following = false
			if len(srv.unread) > 0 {
				m.follow(srv)
			}
		})
	})
}

func (m *model) delivered(e *event) {
	if e.pending--; e.pending == 0 && m.measuring() {
		m.deliveries = append(m.deliveries, m.s.now-e.posted)
	}
}

func (m *model) newEvent(poster int) *event {
	e := &event{posted: m.s.now, poster: poster}
	if m.p.Principals == 1 {
		e.principals = []int{0}
		return e
	}
	for len(e.principals) < m.p.Reach {
		p := m.s.rng.IntN(m.p.Principals)
		if !slices.Contains(e.principals, p) {
			e.principals = append(e.principals, p)
		}
	}
	return e
}

func (m *model) postFrom(poster int) {
	m.post(m.servers[poster%len(m.servers)], m.newEvent(poster))
}

func (m *model) arrive() {
	m.post(m.servers[m.s.rng.IntN(len(m.servers))], m.newEvent(-1))
	m.s.after(m.s.rng.ExpFloat64()*1e6/m.p.Rate, m.arrive)
}

func (m *model) heartbeats(srv *server, sessions int) {
	const every = 10_000.0 // µs
	m.onServer(srv, m.p.Heartbeat*float64(sessions)*every/1e6, func() {})
	m.s.after(every, func() { m.heartbeats(srv, sessions) })
}

// Simulate runs p and reports its measured window.
func Simulate(p Params) (Result, error) {
	if err := p.check(); err != nil {
		return Result{}, err
	}
	s := &sim{rng: rand.New(rand.NewPCG(p.Seed, 1))}
	m := &model{p: p, s: s, notify: &lock{s: s}}
	m.from, m.to = p.Warmup*1e6, (p.Warmup+p.Measure)*1e6
	var shared *cpu
	if p.SharedCores > 0 {
		shared = &cpu{s: s, cores: p.SharedCores}
		m.db, m.bench = shared, shared
	} else {
		m.db, m.bench = &cpu{s: s, cores: p.DBCores}, &cpu{s: s, cores: math.MaxInt}
	}
	for i := range p.Servers {
		c := shared
		if c == nil {
			c = &cpu{s: s, cores: p.ServerCores}
		}
		m.servers = append(m.servers, &server{id: i, cpu: c})
	}
	m.rows = make([]*lock, p.Principals)
	for i := range m.rows {
		m.rows[i] = &lock{s: s}
	}
	for i, srv := range m.servers {
		if n := p.Sessions/p.Servers + min(1, max(0, p.Sessions%p.Servers-i)); n > 0 && p.Heartbeat > 0 {
			m.heartbeats(srv, n)
		}
	}
	if p.Posters > 0 {
		for i := range p.Posters {
			m.postFrom(i)
		}
	} else {
		m.arrive()
	}
	// The locks' use over the window: read at its ends.
	rowFrom := make([]float64, len(m.rows))
	s.runUntil(m.from)
	notifyFrom := m.notify.held
	for i, l := range m.rows {
		rowFrom[i] = l.held
	}
	s.runUntil(m.to)
	window := m.to - m.from
	r := Result{Params: p, Accepted: float64(m.accepted) / p.Measure}
	for _, srv := range m.servers {
		r.Backlog += len(srv.queue)
	}
	if m.accepted == 0 {
		return r, nil
	}
	ev := float64(m.accepted)
	r.ServerCPU, r.DBCPU = m.srvWork/ev, m.dbWork/ev
	r.ServerUse = m.srvWork / window / float64(p.Servers)
	r.DBUse = m.dbWork / window
	r.NotifyLockUse = (m.notify.held - notifyFrom) / window
	for i, l := range m.rows {
		r.RowLockUse = max(r.RowLockUse, (l.held-rowFrom[i])/window)
	}
	r.EventsPerCommit = float64(m.committed) / float64(max(1, m.commits))
	r.AnswerP50, r.AnswerP99 = quantile(m.answers, 0.5)/1e3, quantile(m.answers, 0.99)/1e3
	r.DeliverP50, r.DeliverP99 = quantile(m.deliveries, 0.5)/1e3, quantile(m.deliveries, 0.99)/1e3
	return r, nil
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[min(len(v)-1, int(q*float64(len(v))))]
}

func (p Params) check() error {
	switch {
	case p.Servers < 1:
		return fmt.Errorf("-servers is %d; give 1 or more", p.Servers)
	case p.SharedCores < 0 || p.SharedCores == 0 && (p.ServerCores < 1 || p.DBCores < 1):
		return fmt.Errorf("give -shared-cores, or -server-cores and -db-cores, of 1 or more")
	case p.Posters < 0 || p.Posters > 100_000 || p.Posters == 0 && !(p.Rate > 0 && p.Rate <= 1e6):
		return fmt.Errorf("give -posters (closed loop, up to 100 000) or -rate (events per second, up to 1 000 000), above 0")
	case p.Principals < 1 || p.Principals > 10_000_000 || p.Reach < 1 || p.Reach > p.Principals || p.Principals == 1 && p.Reach != 1:
		return fmt.Errorf("-principals is %d and -reach %d; give 1 to 1, or up to 10 000 000 principals and a reach from 1 to them", p.Principals, p.Reach)
	case p.Sessions < 0 || p.BatchRows < 0:
		return fmt.Errorf("-sessions is %d and -batch-rows %d; give 0 or more", p.Sessions, p.BatchRows)
	case !(p.Warmup >= 0) || !(p.Measure > 0) || p.Warmup+p.Measure > 3600:
		return fmt.Errorf("-warmup and -measure are %g and %g s; give at most an hour in all, the window above 0", p.Warmup, p.Measure)
	}
	for _, c := range []float64{p.ServerEvent, p.ServerCommit, p.ServerWake, p.ServerNote, p.BenchEvent, p.DBEvent, p.DBCommit, p.DBRow, p.DBListener, p.DBWake, p.Flush, p.Heartbeat, p.GatherAfter, p.ServerTrip, p.DBTrip} {
		if !(c >= 0) || c > 1e6 {
			return fmt.Errorf("a cost is %g µs; give 0 to 1 000 000", c)
		}
	}
	return nil
}

// Measured defaults: docs/performance.md, "Capacity model", says how.
func defaults() Params {
	return Params{
		Servers: 1, ServerCores: 2, DBCores: 2,
		Principals: 1, Reach: 1,
		ServerEvent: 35, ServerCommit: 268, ServerWake: 150, ServerNote: 15, BenchEvent: 38,
		DBEvent: 61, DBCommit: 355, DBRow: 38, DBListener: 20, DBWake: 130,
		Flush: 100, Heartbeat: 17, GatherAfter: 200, ServerTrip: 120, DBTrip: 100,
		Warmup: 1, Measure: 5, Seed: 1,
	}
}

func main() {
	p := defaults()
	flag.IntVar(&p.Servers, "servers", p.Servers, "servers sharing the database")
	flag.IntVar(&p.ServerCores, "server-cores", p.ServerCores, "cores of each server")
	flag.IntVar(&p.DBCores, "db-cores", p.DBCores, "cores of the database")
	flag.IntVar(&p.SharedCores, "shared-cores", 0, "one pool of this many cores for the servers, the database and the posters (as on the e2e bench's machine)")
	flag.IntVar(&p.Posters, "posters", 0, "closed-loop posters, each waiting for its answer (0: an open stream at -rate)")
	flag.Float64Var(&p.Rate, "rate", 0, "events per second of the open stream")
	flag.IntVar(&p.Principals, "principals", p.Principals, "principals, each with one session")
	flag.IntVar(&p.Reach, "reach", p.Reach, "principals each event reaches (one inbox row and one delivery each)")
	flag.IntVar(&p.Sessions, "sessions", 0, "idle sessions over the servers, each paying heartbeats")
	flag.IntVar(&p.BatchRows, "batch-rows", 0, "bound a group commit's inbox rows too (0: at most 256 events, whatever their rows)")
	flag.Float64Var(&p.ServerEvent, "server-event", p.ServerEvent, "server CPU per post, µs")
	flag.Float64Var(&p.ServerCommit, "server-commit", p.ServerCommit, "server CPU per group commit, µs")
	flag.Float64Var(&p.ServerWake, "server-wake", p.ServerWake, "server CPU per read of what others wrote, µs")
	flag.Float64Var(&p.ServerNote, "server-note", p.ServerNote, "server CPU per event delivered to a principal's session, µs")
	flag.Float64Var(&p.BenchEvent, "bench-event", p.BenchEvent, "posters' and client's CPU per event with -shared-cores, µs")
	flag.Float64Var(&p.DBEvent, "db-event", p.DBEvent, "database CPU per event, µs")
	flag.Float64Var(&p.DBCommit, "db-commit", p.DBCommit, "database CPU per commit, µs")
	flag.Float64Var(&p.DBRow, "db-row", p.DBRow, "database CPU per inbox row beyond the first of an event, µs")
	flag.Float64Var(&p.DBListener, "db-listener", p.DBListener, "database CPU per server woken by a notifying commit, µs")
	flag.Float64Var(&p.DBWake, "db-wake", p.DBWake, "database CPU per read of what others wrote, µs")
	flag.Float64Var(&p.Flush, "flush", p.Flush, "time for a commit's WAL to reach the disk, µs")
	flag.Float64Var(&p.Heartbeat, "heartbeat", p.Heartbeat, "CPU per idle session per second, µs")
	flag.Float64Var(&p.GatherAfter, "gather-after", p.GatherAfter, "a wait for rows after which a server's next commit gathers, µs (0: never)")
	flag.Float64Var(&p.ServerTrip, "server-trip", p.ServerTrip, "server CPU of a gathering commit's extra round trip, µs")
	flag.Float64Var(&p.DBTrip, "db-trip", p.DBTrip, "database CPU of a gathering commit's extra round trip, µs")
	flag.Float64Var(&p.Warmup, "warmup", p.Warmup, "simulated seconds before measuring")
	flag.Float64Var(&p.Measure, "measure", p.Measure, "simulated seconds measured")
	flag.Uint64Var(&p.Seed, "seed", p.Seed, "random seed")
	flag.Parse()
	r, err := Simulate(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(2)
	}
	json.NewEncoder(os.Stdout).Encode(r)
}
