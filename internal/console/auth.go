package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SessionCookie is the name of the console's session cookie.
const SessionCookie = "ditto_session"

// sessionValue is the cookie's value for a session that expires at exp: the expiry and an
// HMAC-SHA256 of it keyed by the token. It proves the token was presented without holding it,
// and every session ends when the token changes.
func sessionValue(token string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("ditto console session\x00" + e))
	return "v1." + e + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validSession reports whether v is a session value for token that has not expired at now.
func validSession(token, v string, now time.Time) bool {
	parts := strings.Split(v, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return false
	}
	sec, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !now.Before(time.Unix(sec, 0)) {
		return false
	}
	want := sessionValue(token, time.Unix(sec, 0))
	return subtle.ConstantTimeCompare([]byte(v), []byte(want)) == 1
}

// authorized reports whether r carries the token as a bearer header or a valid session cookie
// (always true without a token).
func (c *Console) authorized(r *http.Request) (bearer, cookie bool) {
	if c.cfg.Token == "" {
		return true, false
	}
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
		subtle.ConstantTimeCompare([]byte(got), []byte(c.cfg.Token)) == 1 {
		return true, false
	}
	if ck, err := r.Cookie(SessionCookie); err == nil && validSession(c.cfg.Token, ck.Value, c.now()) {
		return false, true
	}
	return false, false
}

// session lets a request through to a page when it is authorized and redirects it to the
// login form otherwise.
func (c *Console) session(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ck := c.authorized(r); !b && !ck {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// apiSession lets a valid session cookie stand for the bearer header on the API and the
// reports: the request goes on with the header set. A cookie-authorized request that changes
// something must come from this origin (SameSite=Strict already keeps other sites' requests
// from carrying the cookie; this is the second lock). A browser without a session asking for a
// page of the reports is sent to the login form; API clients get the API's own 401.
func (c *Console) apiSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bearer, cookie := c.authorized(r)
		switch {
		case cookie:
			if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+c.cfg.Token)
		case !bearer && r.Header.Get("Authorization") == "" && strings.HasPrefix(r.URL.Path, c.cfg.ReportsPrefix) &&
			strings.Contains(r.Header.Get("Accept"), "text/html"):
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether the browser says r comes from this origin (Sec-Fetch-Site, else
// Origin against Host). A request naming neither is not a browser's: it could not carry the
// cookie's SameSite protection away, and is let through.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		return s == "same-origin" || s == "none"
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// localPath returns next when it is a path on this server ("/…", not "//…"), else "/".
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

type loginData struct {
	Next, Error string
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if c.cfg.Token == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	c.render(w, r, "login", http.StatusOK, pageData{Title: "Sign in", Data: loginData{Next: next}})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	next := localPath(r.PostForm.Get("next"))
	if c.cfg.Token == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), []byte(c.cfg.Token)) != 1 {
		c.render(w, r, "login", http.StatusUnauthorized, pageData{Title: "Sign in",
			Data: loginData{Next: next, Error: "That is not the analyzer's token."}})
		return
	}
	exp := c.now().Add(c.cfg.SessionTTL)
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: sessionValue(c.cfg.Token, exp), Path: "/", Expires: exp,
		MaxAge: int(c.cfg.SessionTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
