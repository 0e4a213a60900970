package console

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/queries"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Config configures a Console. Zero fields take the defaults.
type Config struct {
	// Token, if set, is the analyzer's bearer token: the login form asks for it.
	Token string
	// Limits bound the console's own queries (its guard is its own, with these limits).
	Limits sqlguard.Config
	// ReportsDir is the reports directory served under ReportsPrefix (default "/reports/");
	// the Study page lists the study's reports from it.
	ReportsDir    string
	ReportsPrefix string
	// Analysis configures the Study page's metrics and comparisons (default: seed 1,
	// DefaultPermutations permutations).
	Analysis analysis.Options
	// Public are the tables and views the SQL page lists; default queries.Public().
	Public []queries.Object
	// SessionTTL is how long a login lasts; default 12 hours.
	SessionTTL time.Duration
	// Poll is how often the Studies page's event stream looks for progress; default 1s.
	Poll time.Duration
	// Logger receives a line per page with its server time; default slog.Default().
	Logger *slog.Logger
	// Now is the clock of sessions; default time.Now.
	Now func() time.Time
}

// DefaultPermutations is B of the Study page's permutation tests: the demo's report uses the
// same, so the console and the demo's report agree.
const DefaultPermutations = 2000

// Console serves the web console. Create it with New, serve Handler, and Close it.
type Console struct {
	db      *sql.DB
	cfg     Config
	rd      *reader
	pages   map[string]*template.Template
	reports *reportCache
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New returns a console over db (which the caller hardens with sqlguard.Harden, as for the
// API). It starts computing every study's metrics in the background; Close stops that.
func New(db *sql.DB, cfg Config) (*Console, error) {
	if cfg.ReportsPrefix == "" {
		cfg.ReportsPrefix = "/reports/"
	}
	if cfg.Public == nil {
		cfg.Public = queries.Public()
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Analysis.Permutations == 0 {
		cfg.Analysis.Permutations = DefaultPermutations
	}
	if cfg.Analysis.Seed == 0 {
		cfg.Analysis.Seed = 1
	}
	if err := cfg.Analysis.Validate(); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	guard, err := sqlguard.New(db, cfg.Limits)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{db: db, cfg: cfg, rd: &reader{guard: guard, rows: pageRows}, pages: pages}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.reports = newReportCache(c)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.reports.warm(c.ctx)
	}()
	return c, nil
}

// pageRows is the row limit of a page's statement: a list longer than this says it was cut.
const pageRows = 5000

// Close stops the background computations and waits for them.
func (c *Console) Close() {
	c.cancel()
	c.wg.Wait()
}

func (c *Console) now() time.Time { return c.cfg.Now() }

// Handler returns the console's pages in front of api (the query API and the reports): the
// console answers its own paths and hands every other request to api, letting a session
// cookie stand for the bearer header there.
func (c *Console) Handler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(assetFS, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	// Pages name their icon; a browser still asks for /favicon.ico on the reports' pages.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		http.ServeFileFS(w, r, assets, "favicon.svg")
	})
	mux.HandleFunc("GET /login", c.loginForm)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.logout)
	page := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		mux.Handle(pattern, c.session(c.timed(h)))
	}
	page("GET /{$}", c.studiesPage)
	mux.Handle("GET /studies/progress", c.session(http.HandlerFunc(c.progressStream)))
	page("GET /studies/{study}", c.studyPage)
	page("GET /studies/{study}/cell", c.cellPage)
	page("GET /studies/{study}/runs/{run}", c.runPage)
	page("GET /compare", c.comparePage)
	page("GET /sql", c.sqlPage)
	mux.Handle("/", c.apiSession(api))
	return secure(mux)
}

// contentSecurityPolicy allows this origin only: no inline script or style, no remote origin,
// no framing. Images may be data: URIs (the reports' plots).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// reportsPolicy is the reports' policy: they are self-contained pages with inline CSS and
// plots as data: URIs, and no script.
const reportsPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// secure sets the security headers every answer carries; the API's JSON and files keep them
// too (a policy is harmless there).
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if len(r.URL.Path) >= len("/reports/") && r.URL.Path[:len("/reports/")] == "/reports/" {
			h.Set("Content-Security-Policy", reportsPolicy)
		}
		next.ServeHTTP(w, r)
	})
}

// errNotFound is a page's answer for a study, cell or run that does not exist.
var errNotFound = errors.New("not found")

// timed runs a page handler and answers its error as a page; the page's own rendering sets
// Server-Timing (render).
func (c *Console) timed(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), startKey{}, time.Now())
		r = r.WithContext(ctx)
		if err := h(w, r); err != nil {
			status := http.StatusInternalServerError
			switch {
			case errors.Is(err, errNotFound):
				status = http.StatusNotFound
			case errors.Is(err, errBadRequest):
				status = http.StatusBadRequest
			default:
				c.cfg.Logger.Warn("console: page failed", "path", r.URL.Path, "err", err)
			}
			c.render(w, r, "error", status, pageData{Title: http.StatusText(status), Data: err.Error()})
		}
	})
}

type startKey struct{}

// errBadRequest is a page's answer for parameters it cannot use.
var errBadRequest = errors.New("bad request")

// pageData is what every page template gets: the title, the active navigation item and the
// page's own data.
type pageData struct {
	Title string
	Nav   string
	Data  any
	Token bool // a token protects the console (the page shows the sign-out button)
}

// render executes page name into a buffer and sends it with Server-Timing: the server's time
// since the request began (the page's queries and its rendering).
func (c *Console) render(w http.ResponseWriter, r *http.Request, name string, status int, d pageData) {
	start, ok := r.Context().Value(startKey{}).(time.Time)
	if !ok {
		start = time.Now()
	}
	d.Token = c.cfg.Token != ""
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "base", d); err != nil {
		c.cfg.Logger.Warn("console: render", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	took := time.Since(start)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Server-Timing", "app;dur="+strconv.FormatFloat(float64(took.Microseconds())/1000, 'f', 1, 64))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	c.cfg.Logger.Debug("console: page", "page", name, "path", r.URL.Path, "status", status, "ms", float64(took.Microseconds())/1000)
}

// pageNames are the templates/<name>.html pages, each rendered inside templates/base.html.
var pageNames = []string{"login", "error", "studies", "study", "cell", "run", "compare", "sql"}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/base.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}
