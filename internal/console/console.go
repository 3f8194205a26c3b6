package console

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Service is what the console reads and does: the subscriptions service.
type Service interface {
	List(ctx context.Context, principal string, status mcpe.Status) ([]*subscriptions.Subscription, error)
	Pause(ctx context.Context, principal, id string) (*subscriptions.Subscription, error)
	Resume(ctx context.Context, principal, id string) (*subscriptions.Subscription, error)
	Unsubscribe(ctx context.Context, principal, id string) error
	FireNow(ctx context.Context, principal, id string) (*subscriptions.Subscription, error)
	Replay(ctx context.Context, principal, subscriptionID, eventID string) error
	LatestInbox(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error)
}

// Tokens maps a bearer token to its principal (httpapi.Tokens).
type Tokens interface {
	Lookup(token string) (principal string, ok bool)
}

// LiveSession is one live MCP session, as the console lists it.
type LiveSession struct {
	Principal string
	// ID names the MCP session (its ID's first characters: without tokens
	// the whole ID is a credential); Client the client's name and version.
	ID, Client string
}

// Options configure a Console.
type Options struct {
	// Service is required.
	Service Service
	// Tokens log a principal in; nil logs no principal in.
	Tokens Tokens
	// AdminToken logs in as the administrator, who sees every principal;
	// empty means no administrator.
	AdminToken string
	// Sessions lists the live MCP sessions; nil lists none.
	Sessions func() []LiveSession
	// Cursors returns, per principal with a live session, the inbox
	// sequence number its live sessions were all sent up to
	// (realtime.Registry.Cursors); nil knows none.
	Cursors func() map[string]int64
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Console serves /console and what is under it.
type Console struct {
	opts      Options
	log       *slog.Logger
	adminHash [sha256.Size]byte
	sessions  sessions
	guesses   *guesses
	mux       *http.ServeMux
}

//go:embed assets
var assets embed.FS

var pages = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html"))

// cookieName names the session cookie.
const cookieName = "mcpe_console"

// contentSecurityPolicy allows the console's own files and nothing inline
// but the server-rendered SVG chart, which needs no script or style.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// New returns a Console. It is an error to give neither Tokens nor an
// AdminToken: nobody could log in.
func New(opts Options) (*Console, error) {
	if opts.Service == nil {
		return nil, errors.New("console: Options.Service is required")
	}
	if opts.Tokens == nil && opts.AdminToken == "" {
		return nil, errors.New("console: nobody could log in: give Options.Tokens or Options.AdminToken")
	}
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	log := cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	c := &Console{opts: opts, log: log, guesses: newGuesses()}
	if opts.AdminToken != "" {
		c.adminHash = sha256.Sum256([]byte(opts.AdminToken))
	}
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, err
	}
	c.mux = http.NewServeMux()
	c.mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /console", c.page)
	c.mux.HandleFunc("GET /console/{$}", c.page)
	c.mux.HandleFunc("POST /console/login", c.login)
	c.mux.HandleFunc("POST /console/logout", c.logout)
	c.mux.HandleFunc("POST /console/action", c.action)
	return c, nil
}

// ServeHTTP serves the console with its security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

// current returns the session of r's cookie.
func (c *Console) current(r *http.Request) (string, session, bool) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return "", session{}, false
	}
	ss, ok := c.sessions.get(ck.Value, c.opts.Clock.Now())
	return ck.Value, ss, ok
}

// authenticate returns who token logs in as.
func (c *Console) authenticate(token string) (principal string, admin, ok bool) {
	if token == "" || len(token) > 4096 {
		return "", false, false
	}
	if c.opts.AdminToken != "" {
		h := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(h[:], c.adminHash[:]) == 1 {
			return "", true, true
		}
	}
	if c.opts.Tokens != nil {
		if p, ok := c.opts.Tokens.Lookup(token); ok {
			return p, false, true
		}
	}
	return "", false, false
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		c.render(w, http.StatusBadRequest, "login.html", loginPage{Error: "The form could not be read."})
		return
	}
	addr, _, _ := net.SplitHostPort(r.RemoteAddr)
	now := c.opts.Clock.Now()
	if wait := c.guesses.wait(addr, now); wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		c.render(w, http.StatusTooManyRequests, "login.html", loginPage{Error: fmt.Sprintf(
			"Too many wrong tokens were tried; try again in %d seconds.", secs)})
		return
	}
	principal, admin, ok := c.authenticate(r.PostForm.Get("token"))
	if !ok {
		c.guesses.failed(addr, now)
		c.log.Info("console login refused", "remote", r.RemoteAddr)
		c.render(w, http.StatusUnauthorized, "login.html", loginPage{Error: "This token is not a token of this server."})
		return
	}
	expires := now.Add(12 * time.Hour) // a login lasts a working day
	id := c.sessions.create(principal, admin, expires, now)
	http.SetCookie(w, c.cookie(r, id, expires))
	c.log.Info("console login", "principal", principal, "admin", admin)
	http.Redirect(w, r, "/console", http.StatusSeeOther)
}

func (c *Console) cookie(r *http.Request, value string, expires time.Time) *http.Cookie {
	ck := &http.Cookie{
		Name:     cookieName,
		Value:    value,
		Path:     "/console",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		// Secure when r came over TLS, or named a host other than this
		// machine (the server serves no TLS itself, so such a console is
		// reached through a TLS proxy). On loopback it is not, so that
		// http://localhost works.
		Secure:  r.TLS != nil || !httpapi.IsLoopbackHost(r.Host),
		Expires: expires,
	}
	if value == "" {
		ck.MaxAge = -1
	}
	return ck
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	id, ss, ok := c.current(r)
	if ok && !c.checkCSRF(w, r, ss) {
		return
	}
	c.sessions.end(id)
	http.SetCookie(w, c.cookie(r, "", time.Unix(0, 0)))
	http.Redirect(w, r, "/console", http.StatusSeeOther)
}

// checkCSRF parses r's form and refuses it with 403 unless it carries the
// session's CSRF token.
func (c *Console) checkCSRF(w http.ResponseWriter, r *http.Request, ss session) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "Bad Request: the form could not be read", http.StatusBadRequest)
		return false
	}
	got := r.PostForm.Get("csrf")
	if subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) != 1 {
		http.Error(w, "Forbidden: this form has no valid CSRF token; reload the console and try again", http.StatusForbidden)
		return false
	}
	return true
}

// ids and event IDs the forms may carry.
var (
	subscriptionIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	eventIDPattern        = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,200}$`)
)

// maxPrincipalLen bounds a principal name in a form or URL.
const maxPrincipalLen = 512

func (c *Console) action(w http.ResponseWriter, r *http.Request) {
	id, ss, ok := c.current(r)
	if !ok {
		http.Error(w, "Unauthorized: log in to the console first", http.StatusUnauthorized)
		return
	}
	if !c.checkCSRF(w, r, ss) {
		return
	}
	f := r.PostForm
	principal := ss.principal
	if ss.admin {
		principal = f.Get("principal")
		if principal == "" || len(principal) > maxPrincipalLen {
			http.Error(w, "Bad Request: principal is missing or too long", http.StatusBadRequest)
			return
		}
	}
	sub := f.Get("subscription")
	if !subscriptionIDPattern.MatchString(sub) {
		http.Error(w, "Bad Request: subscription must be a subscription ID", http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	var err error
	var done string
	switch a := f.Get("action"); a {
	case "pause":
		_, err = c.opts.Service.Pause(ctx, principal, sub)
		done = "Paused " + sub + "."
	case "resume":
		_, err = c.opts.Service.Resume(ctx, principal, sub)
		done = "Resumed " + sub + "."
	case "delete":
		err = c.opts.Service.Unsubscribe(ctx, principal, sub)
		done = "Deleted " + sub + "."
	case "fire":
		_, err = c.opts.Service.FireNow(ctx, principal, sub)
		done = "Fired the digest of " + sub + "."
	case "replay":
		ev := f.Get("event")
		if !eventIDPattern.MatchString(ev) {
			http.Error(w, "Bad Request: event must be an event ID", http.StatusBadRequest)
			return
		}
		err = c.opts.Service.Replay(ctx, principal, sub, ev)
		done = "Replayed event " + ev + " to " + sub + "."
	default:
		http.Error(w, "Bad Request: action must be pause, resume, delete, fire or replay", http.StatusBadRequest)
		return
	}
	if err != nil {
		c.log.Info("console action refused", "action", f.Get("action"), "subscription_id", sub, "error", err)
		c.sessions.setFlash(id, err.Error(), true)
	} else {
		c.log.Info("console action", "action", f.Get("action"), "subscription_id", sub, "principal", principal, "admin", ss.admin)
		c.sessions.setFlash(id, done, false)
	}
	http.Redirect(w, r, pageURL(ss.admin, principal), http.StatusSeeOther)
}

// pageURL is the console page to return to after an action.
func pageURL(admin bool, principal string) string {
	if !admin {
		return "/console"
	}
	return "/console?" + url.Values{"principal": {principal}}.Encode()
}

func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	id, ss, ok := c.current(r)
	if !ok {
		c.render(w, http.StatusOK, "login.html", loginPage{})
		return
	}
	want := r.URL.Query().Get("principal")
	if len(want) > maxPrincipalLen {
		http.Error(w, "Bad Request: principal is too long", http.StatusBadRequest)
		return
	}
	p, err := c.build(r.Context(), ss, want)
	if err != nil {
		c.log.Warn("console page", "error", err)
		http.Error(w, "Internal Server Error: the console could not read the server's state", http.StatusInternalServerError)
		return
	}
	p.Flash, p.FlashError = c.sessions.takeFlash(id)
	c.render(w, http.StatusOK, "page.html", p)
}

func (c *Console) render(w http.ResponseWriter, status int, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		c.log.Warn("console render", "template", name, "error", err)
	}
}
