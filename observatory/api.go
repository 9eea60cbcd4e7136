package observatory

import (
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/websocket"

	"github.com/thoughtbox/thoughtbox/ledger"
)

//go:embed web
var webFiles embed.FS

func (o *Observatory) routes() *http.ServeMux {
	mux := http.NewServeMux()
	web, _ := fs.Sub(webFiles, "web")
	files := http.FileServerFS(web)
	mux.HandleFunc("GET /ws", o.serveWS)
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && websocket.IsWebSocketUpgrade(r) {
			o.serveSocket(w, r, true) // seed 000's endpoint, ws://host:1729/
			return
		}
		if a, identity := o.authorize(r); a != accessGranted {
			status, p := o.refusal(a, identity)
			msg := p.Message
			if status == http.StatusUnauthorized {
				msg = "The Observatory needs a token: open it as /?token=<token>"
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(status)
			w.Write([]byte(msg + ".\n"))
			return
		}
		if tok := r.URL.Query().Get("token"); tok != "" {
			// The page's socket and API calls then carry the token as a
			// cookie, and the token leaves the address bar (see app.js).
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self'")
		files.ServeHTTP(w, r)
	})
	o.registerUI(mux)
	o.registerCode(mux, "/ui/code")
	if o.cfg.HTTPAPI {
		o.registerCode(mux, "/api/code")
		mux.HandleFunc("GET /api/sessions", o.api(o.apiList))
		mux.HandleFunc("GET /api/sessions/{id}", o.api(o.apiSnapshot))
		mux.HandleFunc("GET /api/sessions/{id}/export", o.api(o.apiExport))
		mux.HandleFunc("GET /api/sessions/{id}/analysis", o.api(o.apiAnalysis))
		mux.HandleFunc("OPTIONS /api/", o.preflight)
	} else {
		mux.HandleFunc("GET /api/", apiOff)
	}
	return mux
}

// envHTTPAPI is the setting that turns the HTTP API on. config reads it
// (this package does not import config); it is spelled here for the error
// a request gets while the API is off, and TestAPIOffNamesTheSetting holds
// the two spellings together.
const envHTTPAPI = "THOUGHTBOX_OBSERVATORY_HTTP_API"

// apiOff answers every /api/ request while the API is off: a JSON error
// that names the setting, not a bare "404 page not found" that reads as a
// wrong path. Nothing about the ledger is told, so no token is asked for.
func apiOff(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusNotFound, ErrorPayload{Code: ledger.CodeInvalidOperation,
		Message: "the HTTP API is off: start the Observatory with --http-api, or set " + envHTTPAPI + "=true",
		Details: map[string]any{"setting": envHTTPAPI, "flag": "--http-api"}})
}

// preflight answers a browser's CORS preflight: a page from an allowed
// origin that sends its token in an Authorization header asks first. The
// preflight itself carries no token (browsers never send one), so it is
// answered on the origin alone; the GET that follows is checked in full.
func (o *Observatory) preflight(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" || !o.originAllowed(r) {
		writeError(w, http.StatusForbidden, ErrorPayload{Code: ledger.CodeInvalidOperation,
			Message: "origin " + strconv.Quote(origin) + " is not allowed: add it to THOUGHTBOX_OBSERVATORY_CORS"})
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", "GET, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization")
	h.Set("Access-Control-Max-Age", "600")
	h.Add("Vary", "Origin")
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	w.WriteHeader(http.StatusNoContent)
}

// api wraps an API handler with the token and origin checks, and writes
// its result or error as JSON.
func (o *Observatory) api(h func(w http.ResponseWriter, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a, identity := o.authorize(r); a != accessGranted {
			status, p := o.refusal(a, identity)
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="thoughtbox-observatory"`)
			}
			writeError(w, status, p)
			return
		}
		if !o.originAllowed(r) {
			writeError(w, http.StatusForbidden, ErrorPayload{Code: ledger.CodeInvalidOperation,
				Message: "origin " + strconv.Quote(r.Header.Get("Origin")) + " is not allowed: add it to THOUGHTBOX_OBSERVATORY_CORS"})
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Vary", "Origin")
		}
		v, err := h(w, r)
		if err != nil {
			p := errorPayload(err)
			status := httpStatus(p.Code)
			if errors.As(err, new(notFoundError)) {
				status = http.StatusNotFound
			}
			writeError(w, status, p)
			return
		}
		if v == nil {
			return // the handler wrote the body
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
}

func writeError(w http.ResponseWriter, status int, p ErrorPayload) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(p)
}

// httpStatus maps seed 002's error codes to HTTP statuses.
func httpStatus(c ledger.Code) int {
	switch c {
	case ledger.CodeSessionNotFound, ledger.CodeThoughtNotFound:
		return http.StatusNotFound
	case ledger.CodeInvalidPayload, ledger.CodeInvalidOperation:
		return http.StatusBadRequest
	case ledger.CodeStageRequirementNotMet:
		return http.StatusForbidden
	case ledger.CodeSamplingNotSupported:
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

func (o *Observatory) apiList(_ http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	lq := listQuery{Status: q.Get("status"), Search: q.Get("search")}
	for _, t := range q["tag"] {
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				lq.Tags = append(lq.Tags, s)
			}
		}
	}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"limit", &lq.Limit}, {"offset", &lq.Offset}} {
		if s := q.Get(f.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return nil, ledger.InvalidField(f.name, "must be a whole number, got %q", s)
			}
			*f.dst = n
		}
	}
	return o.listSessions(r.Context(), lq)
}

// sessionID is the session a request's {id} names: a full id or, as on
// the command line, a unique prefix of one. An ambiguous prefix is refused
// (400, INVALID_PAYLOAD) with the candidates in details.candidates.
func (o *Observatory) sessionID(r *http.Request) (string, error) {
	return o.ledger.Resolve(r.Context(), r.PathValue("id"))
}

func (o *Observatory) apiSnapshot(_ http.ResponseWriter, r *http.Request) (any, error) {
	id, err := o.sessionID(r)
	if err != nil {
		return nil, err
	}
	snap, _, err := o.snapshot(r.Context(), id)
	if err != nil {
		return nil, err
	}
	return snap, nil
}

func (o *Observatory) apiExport(w http.ResponseWriter, r *http.Request) (any, error) {
	format, err := ledger.ParseExportFormat(r.URL.Query().Get("format"))
	if err != nil {
		return nil, err
	}
	id, err := o.sessionID(r)
	if err != nil {
		return nil, err
	}
	v, err := o.ledger.Load(r.Context(), id)
	if err != nil {
		return nil, err
	}
	out, err := ledger.Export(v, ledger.ExportOptions{Format: format, At: o.now().UTC()})
	if err != nil {
		return nil, err
	}
	switch format {
	case ledger.ExportMarkdown:
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	case ledger.ExportCipher:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "application/json")
	}
	w.Write(out)
	return nil, nil
}

func (o *Observatory) apiAnalysis(_ http.ResponseWriter, r *http.Request) (any, error) {
	id, err := o.sessionID(r)
	if err != nil {
		return nil, err
	}
	v, err := o.ledger.Load(r.Context(), id)
	if err != nil {
		return nil, err
	}
	return ledger.Analyze(v), nil
}
