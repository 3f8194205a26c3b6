package subscriptions

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Store keeps subscriptions, accepted events and each principal's inbox.
// Every method that takes a principal acts only on that principal's data, and
// reports another principal's subscription as ErrNotFound. Implementations
// must pass the contract suite in subscriptions/storetest. It is made of one
// contract per concern, so that a second backend implements, and a part of
// the server depends on, small contracts (the handler runner needs only job
// methods, the realtime registry only inbox reads).
type Store interface {
	SubscriptionStore
	PublishStore
	DigestStore
	InboxStore
	RetentionStore
	JobStore
	ThrottleStore
	// Close releases the store.
	Close() error
}

// SubscriptionStore keeps subscriptions, and expires them.
type SubscriptionStore interface {
	// CreateSubscription inserts sub (with its NextFireAt) unless its
	// principal already has max active or paused subscriptions, in which
	// case it returns a *LimitError. A principal keeps at most max
	// subscriptions in all, expired ones included: when the new one would
	// pass that, the expired ones that expired first are deleted (with
	// their buffers) to make room.
	CreateSubscription(ctx context.Context, sub *Subscription, max int) error
	// GetSubscription returns one subscription of principal.
	GetSubscription(ctx context.Context, principal, id string) (*Subscription, error)
	// UpdateSubscription stores the status, filter, delivery, updatedAt,
	// expiresAt and nextFireAt of sub, which must belong to sub.Principal.
	UpdateSubscription(ctx context.Context, sub *Subscription) error
	// DeleteSubscription removes a subscription of principal and the events
	// waiting in its buffer. What it delivered stays in the inbox until
	// retention removes it.
	DeleteSubscription(ctx context.Context, principal, id string) error
	// ListSubscriptions returns the subscriptions that match q, oldest first.
	ListSubscriptions(ctx context.Context, q ListQuery) ([]*Subscription, error)

	// ExpireSubscriptions marks every active or paused subscription whose
	// expiresAt is at or before now as expired and appends to its owner's
	// inbox, in one transaction: first, if events wait in its buffer,
	// InboxBatch entries with all of them, at most 1000 per entry (nothing
	// buffered is dropped), then an InboxExpired entry naming the
	// subscription, all marked pending (kept for the owner's next live
	// session). It returns the entries in sequence order.
	ExpireSubscriptions(ctx context.Context, now time.Time) ([]InboxEntry, error)
	// NextExpiry returns the earliest expiresAt among active and paused
	// subscriptions; ok is false when none has one.
	NextExpiry(ctx context.Context) (t time.Time, ok bool, err error)
	// DeletePrincipal removes everything principal owns.
	DeletePrincipal(ctx context.Context, principal string) error
	// DeletePrincipalsWithPrefix removes everything owned by principals whose
	// name starts with prefix, and returns how many subscriptions went.
	DeletePrincipalsWithPrefix(ctx context.Context, prefix string) (int, error)
}

// PublishStore stores accepted events and their deliveries.
type PublishStore interface {
	// Publish stores b's publications, received at b.Now, in one
	// transaction (a group commit): for each, the event; one inbox entry
	// per principal among its realtime targets, listing that principal's
	// target subscriptions; and the event in the buffer of each cron or
	// scheduled target. A target whose subscription is not active when the
	// transaction runs (it was paused, expired or deleted after it was
	// matched) is left out; the store looks their status up unless
	// b.Deactivations says nothing stopped since. An event whose ID, or
	// whose type and sourceEventId from the same Source, was accepted
	// before (or earlier in the same call) is not stored again: its result
	// then has Duplicate set and the first event's ID, and nothing is
	// delivered. The results match b.Publications one for one.
	Publish(ctx context.Context, b PublishBatch) ([]PublishResult, error)
	// Deactivations counts the times a subscription stopped being active
	// (paused, expired, deleted); it only grows, and is never 0.
	Deactivations(ctx context.Context) (int64, error)
}

// DigestStore keeps the buffers of cron and scheduled subscriptions and
// fires them.
type DigestStore interface {
	// Fire delivers what waits in the buffers of reqs' subscriptions, in one
	// transaction: per request, the oldest waiting events (at most Max, or
	// all of them in batches of Max when Drain) become one InboxBatch entry
	// per batch when Aggregate, or one InboxEvent entry each otherwise;
	// they leave the buffer; the subscription records now as its last fire
	// and Next as its next; with Expire it then expires, with an
	// InboxExpired entry. Entries of a request with Pending are marked for
	// delivery when the owner next connects. An empty buffer writes no
	// delivery entry, unless Empty: then one InboxBatch with no events. A
	// request for a subscription that no longer exists, is not active or
	// belongs to another principal is skipped, and so is one whose Due is
	// set and is not the subscription's next fire. The results match reqs
	// one for one, in order.
	Fire(ctx context.Context, reqs []FireRequest, now time.Time) ([]FireResult, error)
	// DueFires returns the active subscriptions of buffered channel c whose
	// next fire is at or before now, earliest first (then by ID), at most
	// limit.
	DueFires(ctx context.Context, c mcpe.Channel, now time.Time, limit int) ([]DueFire, error)
	// NextFire returns the earliest next fire of an active subscription of
	// buffered channel c; ok is false when there is none.
	NextFire(ctx context.Context, c mcpe.Channel) (t time.Time, ok bool, err error)
	// PendingEntries returns up to limit of principal's most recent entries
	// marked pending by Fire, oldest first.
	PendingEntries(ctx context.Context, principal string, limit int) ([]InboxEntry, error)
	// ClearPending unmarks the pending entries of principal up to seq.
	ClearPending(ctx context.Context, principal string, seq int64) error
}

// InboxStore reads each principal's inbox.
type InboxStore interface {
	// ReadInbox returns up to limit (> 0) entries of principal's inbox with a
	// sequence number above after, oldest first, and whether more follow.
	ReadInbox(ctx context.Context, principal string, after int64, limit int) ([]InboxEntry, bool, error)
	// LatestInbox returns the newest limit (> 0) entries of principal's
	// inbox, oldest first: all of them when it holds fewer.
	LatestInbox(ctx context.Context, principal string, limit int) ([]InboxEntry, error)
	// InboxEvent returns the body of event id if an entry of principal's
	// inbox holds it, else nil.
	InboxEvent(ctx context.Context, principal, id string) (json.RawMessage, error)
	// PrunedThrough returns the highest sequence number of principal's
	// inbox that retention removed, or 0.
	PrunedThrough(ctx context.Context, principal string) (int64, error)
	// PollCursor returns the cursor last handed to principal by events_poll,
	// or 0.
	PollCursor(ctx context.Context, principal string) (int64, error)
	// SetPollCursor records the cursor last handed to principal.
	SetPollCursor(ctx context.Context, principal string, seq int64) error
}

// RetentionStore applies the retention limits.
type RetentionStore interface {
	// Prune applies r: it trims inboxes to their size and age limits (but
	// keeps the entries r.Keep names, and records what it removed for
	// PrunedThrough), drops
	// events that no inbox entry needs and that are older than the dedup
	// window, and deletes subscriptions that expired (ExpireSubscriptions, or
	// an update to expired) long enough ago. Delivery counts survive the
	// inbox entries they counted. A zero field of r disables that limit.
	Prune(ctx context.Context, r Retention, now time.Time) (PruneStats, error)
}

// JobStore keeps handlers and their runs (handler jobs).
type JobStore interface {
	// SetHandler replaces the handler of a subscription of principal (nil
	// removes it) and its signing secrets, and turns it back on if it was
	// off. A removed handler's pending runs go with it; those of a replaced
	// one run with the new handler.
	SetHandler(ctx context.Context, principal, id string, h *mcpe.HandlerSpec, secrets *WebhookSecrets) error
	// DueJobs returns up to limit handler runs due at now, leaving out
	// the jobs in q.Skip and, when q.PerPrincipal is set, the jobs of a
	// principal beyond its room (q.PerPrincipal - q.InFlight[principal]).
	// Principals take turns, each its oldest due jobs first: a job's turn
	// is its principal's jobs in flight (q.InFlight) plus its jobs due
	// before it, and jobs come by turn, then due time. So the first job of
	// a principal with nothing in flight comes before the second of any
	// other, and a principal's backlog never crowds out another's jobs. Every delivery (inbox entry) of a subscription with a
	// handler that is on becomes a job in the transaction that records it,
	// whatever its status later.
	DueJobs(ctx context.Context, now time.Time, limit int, q JobQuery) ([]*Invocation, error)
	// FinishJobs records the outcomes of runs, in one transaction: a run
	// with RetryIn is due again that long after its At; any other ends its
	// job, counted as succeeded or failed; Disable turns the handler off
	// and drops its other jobs.
	FinishJobs(ctx context.Context, done []JobDone) error
	// NextJobDue returns when the earliest job DueJobs could return with q
	// is due: not in q.Skip, of a principal with room left; ok is false
	// when there is none.
	NextJobDue(ctx context.Context, q JobQuery) (t time.Time, ok bool, err error)
	// ReleaseJobs gives back the claims (JobQuery.Lease) on jobs that were
	// handed out and not finished: they are due at now.
	ReleaseJobs(ctx context.Context, ids []string, now time.Time) error
}

// ThrottleStore ends the throttle windows (mcpe.Throttle) Publish opens.
type ThrottleStore interface {
	// EndWindows ends, in one transaction, up to limit windows due by now,
	// earliest first: one that folded events of an active subscription
	// becomes an InboxEvent entry with the latest (Remaining counts them)
	// and opens the next window; any other closes. more says others may be due.
	EndWindows(ctx context.Context, now time.Time, limit int) (entries []InboxEntry, more bool, err error)
	// NextWindowEnd returns the earliest end of an open window, if any.
	NextWindowEnd(ctx context.Context) (t time.Time, ok bool, err error)
}

// JobQuery says which handler jobs DueJobs and NextJobDue consider. The zero
// value considers every job.
type JobQuery struct {
	// Skip are jobs left out: those taken and not yet finished.
	Skip []string
	// PerPrincipal, when positive, is how many jobs of one principal may
	// be in flight: a principal gets at most PerPrincipal - InFlight[p].
	PerPrincipal int
	// InFlight counts each principal's jobs taken and not yet finished.
	InFlight map[string]int
	// Lease, when positive, makes DueJobs claim the jobs it returns: each
	// is due again only Lease after now, so that another process sharing
	// the store does not run it meanwhile, and a process that dies while
	// running it leaves it to run again (with the same job ID) once the
	// lease is over. It must be longer than a run can take.
	Lease time.Duration
}

// JobDone is the outcome of one handler run.
type JobDone struct {
	JobID          string
	SubscriptionID string
	Outcome        Outcome
	// At is when the run ended.
	At time.Time
}

// ListQuery selects subscriptions.
type ListQuery struct {
	// Principal selects one owner; empty selects every owner.
	Principal string
	// Status selects one status; empty selects all.
	Status mcpe.Status
}

// PublishBatch is what Store.Publish stores.
type PublishBatch struct {
	Publications []Publication
	// Now is when they were received.
	Now time.Time
	// Deactivations is the count (Store.Deactivations) that the routing of
	// the publications reflects: every subscription that stopped being
	// active up to it was left out of their targets. When the store's count
	// is the same, no target can have stopped since, and their status is
	// not looked up. Zero always looks it up.
	Deactivations int64
	// More, when set, may be called by Publish, before it returns and on
	// its goroutine, once it holds the rows of locked (the principals the
	// publications write to, sorted): it returns the publications that
	// arrived meanwhile and write to those only, for the same transaction,
	// whose results must follow the others' (every call's, in order).
	More func(locked []string) []Publication
}

// Publication is one event for Store.Publish: the event, its JSON form,
// the subscriptions it was matched to, and who posted it (FromSource): a
// sourceEventId is the event's ID at its Source, and names a duplicate
// only among that source's events.
type Publication struct {
	Event   *mcpe.Event
	Raw     json.RawMessage
	Targets []Target
	Source  string
}

// Target is one delivery of a published event.
type Target struct {
	SubscriptionID string
	Principal      string
	Channel        mcpe.Channel
	// Window, when set, throttles a realtime target: Publish opens a window
	// for Group, or folds the event into the open one and delivers nothing.
	Group  string
	Window time.Duration
}

// PublishResult is what Publish did with an event.
type PublishResult struct {
	// EventID is the ID of the stored event; for a duplicate, the ID of the
	// event accepted first.
	EventID string `json:"id"`
	// Duplicate is true when the event had been accepted before and was
	// neither stored nor routed again.
	Duplicate bool `json:"duplicate,omitempty"`
	// Delivered are the inbox entries written, one per principal, in
	// sequence order.
	Delivered []InboxEntry `json:"-"`
}

// InboxEntry is one record of what was delivered to a principal: what
// events_poll returns and what notifications carry. An event that matches
// several of a principal's subscriptions is one entry listing them all.
type InboxEntry struct {
	// Seq orders the inbox; it grows across all principals.
	Seq       int64
	Principal string
	// SubscriptionIDs are the subscriptions the entry is for, at least one.
	SubscriptionIDs []string
	Kind            mcpe.InboxKind
	// Event is the event's JSON for InboxEvent entries.
	Event json.RawMessage
	// Events are the events of an InboxBatch entry, oldest first, and
	// Remaining how many more were still waiting after it; for an
	// InboxEvent entry that ends a throttle window, how many events it
	// stands for.
	Events    []json.RawMessage
	Remaining int
	CreatedAt time.Time
	// Pending is true while the entry waits for its owner to connect
	// (FireRequest.Pending); the store sets it when it reads entries.
	Pending bool
}

// DueFire is a subscription whose fire is due, as Store.DueFires returns it.
type DueFire struct {
	SubscriptionID string
	Principal      string
	Delivery       mcpe.Delivery
	// Due is the fire's time: the subscription's next fire when it was
	// read.
	Due time.Time
}

// FireRequest asks Store.Fire to deliver one subscription's buffer.
type FireRequest struct {
	SubscriptionID string
	Principal      string
	// Max bounds the events of one delivery.
	Max int
	// Aggregate makes one InboxBatch per delivery instead of one
	// InboxEvent per event.
	Aggregate bool
	// Drain delivers everything waiting, in deliveries of at most Max.
	Drain bool
	// Empty writes a digest even when nothing waits: one InboxBatch with no
	// events.
	Empty bool
	// Next is the subscription's next fire; nil when there is none.
	Next *time.Time
	// Expire ends the subscription after this fire.
	Expire bool
	// Pending marks the entries for delivery when the owner next connects.
	Pending bool
	// Due, when set, is the fire's time as DueFires read it: the request
	// is skipped unless the subscription's next fire is still that, so
	// that of several processes sharing the store that read the same due
	// fire, one fires it.
	Due time.Time
}

// FireResult is what Fire did for one request.
type FireResult struct {
	SubscriptionID string
	// Entries are the inbox entries written, in sequence order.
	Entries []InboxEntry
	// Remaining counts the events still waiting.
	Remaining int
	// Skipped is true when the subscription was gone or not active.
	Skipped bool
}

// Retention bounds what the store keeps. A zero field means no limit.
type Retention struct {
	// InboxMaxEntries is the most inbox entries kept per principal.
	InboxMaxEntries int
	// InboxMaxAge is how long an inbox entry is kept.
	InboxMaxAge time.Duration
	// DedupWindow is how long an accepted event's ID and sourceEventId are
	// remembered to refuse duplicates.
	DedupWindow time.Duration
	// ExpiredMaxAge is how long an expired subscription stays listed.
	ExpiredMaxAge time.Duration
	// Keep maps principals to a sequence number: their inbox entries above
	// it are kept whatever the limits, because a live session has not been
	// sent them yet.
	Keep map[string]int64
}

// PruneStats counts what Prune deleted.
type PruneStats struct {
	InboxEntries  int
	Events        int
	Subscriptions int
}

// Shared is implemented by a store that several processes may use at once
// (several servers on one SQLite file, or replicas on one PostgreSQL
// database). Each process follows what the others write through it: the
// inbox entries of the principals it has live sessions for, which it
// delivers, and the changes to subscriptions, which it routes by.
type Shared interface {
	// StoreID names the store: two processes that read the same ID share
	// it.
	StoreID(ctx context.Context) (string, error)
	// InboxPerPrincipal reports how the store numbers inbox entries: each
	// principal's apart, one after the other (true), or all principals'
	// in one sequence.
	InboxPerPrincipal() bool
	// Heads returns the newest inbox number of each of principals (keyed
	// by principal), or, numbering one sequence, the newest of all (keyed
	// ""), and the newest subscription change number. Entries and changes
	// are numbered in commit order: once Heads returned n, no entry (of
	// that principal) or change numbered n or less is committed later.
	Heads(ctx context.Context, principals []string) (inbox map[string]int64, changes int64, err error)
	// InboxRange returns the entries of each span's principal numbered
	// above its After and at most its Through, oldest first within a
	// principal, at most limit (> 0), and whether more follow.
	InboxRange(ctx context.Context, spans []InboxSpan, limit int) ([]InboxEntry, bool, error)
	// ChangedSubscriptions returns the subscriptions changed by changes
	// numbered above after and at most through, each once, in the order of
	// their last change, with what routing needs of their state now.
	// complete is false when retention removed changes above after: the
	// caller must then reload every subscription.
	ChangedSubscriptions(ctx context.Context, after, through int64) (changes []Change, complete bool, err error)
}

// InboxSpan names entries of one principal's inbox: those numbered above
// After and at most Through.
type InboxSpan struct {
	Principal      string
	After, Through int64
}

// Companions is implemented by a store that knows whether other processes
// had it open when this one opened it. Service.Start deletes what the
// sessions of earlier runs left behind (ServiceOptions.EphemeralPrefix)
// only when none had: otherwise the live sessions of those processes
// would lose their subscriptions. err says why the store could not tell;
// beside is then true, which can only keep what earlier runs left.
type Companions interface {
	OpenedBeside() (beside bool, err error)
}

// Runs is implemented by a store that several servers may share. A Service
// with ephemeral principals (ServiceOptions.EphemeralPrefix) names those of
// its run after it, and marks the run in the store every
// DefaultMarkInterval. A run whose mark is older than DefaultMarkLapse
// ended without deleting what its sessions own (its process was killed,
// or lost the store for that long): a live Service reclaims it.
type Runs interface {
	// MarkRun records that run was alive at t. known is false when the
	// store held no mark of run: its first, or after another server
	// reclaimed it.
	MarkRun(ctx context.Context, run string, t time.Time) (known bool, err error)
	// LapsedRuns returns at most limit runs whose mark is older than
	// before, oldest first.
	LapsedRuns(ctx context.Context, before time.Time, limit int) ([]string, error)
	// ReclaimRun deletes, in one transaction, run's mark if it is older
	// than before (whatever its age when before is zero) and then
	// everything owned by principals whose name starts with prefix. It
	// reports whether the mark went, and how many subscriptions; nothing is
	// deleted when run was marked at or after before.
	ReclaimRun(ctx context.Context, run string, before time.Time, prefix string) (reclaimed bool, subscriptions int, err error)
}

// Notifier is implemented by a Shared store that can tell when another
// process wrote (PostgreSQL's LISTEN/NOTIFY): a follower then looks at once
// rather than at its next interval, which stays as the fallback.
type Notifier interface {
	// Written returns a channel that receives after other processes
	// committed inbox entries or subscription changes (and after this
	// process's own commits too when OwnWritesTold). It is the same channel
	// on every call.
	Written() <-chan struct{}
	// OwnWritesTold reports whether Written also receives after this
	// process's commits.
	OwnWritesTold() bool
}

// Change is one changed subscription, as Shared.ChangedSubscriptions reads
// it.
type Change struct {
	SubscriptionID string
	// Subscription has the ID, principal, status, filter, delivery and
	// updatedAt of the subscription; nil when it was deleted.
	Subscription *Subscription
}

// Publisher accepts events: Service implements it, and the HTTP ingest and
// the adapters publish through it, so validation, dedup and routing are the
// same for every source.
type Publisher interface {
	Publish(ctx context.Context, ev mcpe.Event) (PublishResult, error)
}
