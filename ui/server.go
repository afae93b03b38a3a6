package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/report/theme"
)

// DefaultAddr is where the page listens when --ui is given no host.
const DefaultAddr = "127.0.0.1:8080"

// minInterval is the shortest time between two server-sent events.
const minInterval = 500 * time.Millisecond

// Handler returns the page's HTTP handler:
//
//	GET /            the page
//	GET /api/state   the feed's [State] as JSON
//	GET /events      server-sent events, one "state" event per change (at most two a second)
func (f *Feed) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", f.servePage)
	mux.HandleFunc("GET /api/state", f.serveState)
	mux.HandleFunc("GET /events", f.serveEvents)
	return mux
}

func (f *Feed) servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
	info := f.Snapshot().Info
	if err := pageTmpl.Execute(w, info); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (f *Feed) serveState(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(f.Snapshot()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (f *Feed) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	fmt.Fprint(w, "retry: 2000\n\n")
	fl.Flush()
	var after uint64
	if v, err := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64); err == nil {
		after = v
	} else { // a new client gets the state at once
		st := f.Snapshot()
		if !f.writeEvent(w, fl, st) {
			return
		}
		after = st.Version
	}
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		st, changed, ok := f.wait(after)
		if ok {
			if !f.writeEvent(w, fl, st) {
				return
			}
			after = st.Version
			select { // throttle
			case <-r.Context().Done():
				return
			case <-time.After(minInterval):
			}
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-keepalive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// writeEvent sends st as one "state" event; false when the client is gone.
func (f *Feed) writeEvent(w http.ResponseWriter, fl http.Flusher, st State) bool {
	b, err := json.Marshal(st)
	if err != nil {
		return false
	}
	if _, err := fmt.Fprintf(w, "id: %d\nevent: state\ndata: %s\n\n", st.Version, b); err != nil {
		return false
	}
	fl.Flush()
	return true
}

// Server is a running live page.
type Server struct {
	// URL is the page's address, e.g. http://127.0.0.1:8080/.
	URL  string
	done chan error
}

// Start listens on addr (host:port; an empty host means 127.0.0.1, port 0
// picks a free one) and serves the feed's page until ctx is done.
func Start(ctx context.Context, addr string, feed *Feed) (*Server, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("ui: address %q: want host:port, e.g. %s", addr, DefaultAddr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	srv := &http.Server{Handler: feed.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	s := &Server{URL: "http://" + ln.Addr().String() + "/", done: make(chan error, 1)}
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // event streams end with ctx (BaseContext)
	}()
	return s, nil
}

// Wait blocks until the server has stopped and returns its error.
func (s *Server) Wait() error { return <-s.done }

// Serve serves the feed's page on addr until ctx is done.
func Serve(ctx context.Context, addr string, feed *Feed) error {
	s, err := Start(ctx, addr, feed)
	if err != nil {
		return err
	}
	return s.Wait()
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"css":    func() template.CSS { return template.CSS(theme.CSS) },
	"colors": func() template.JS { return template.JS(theme.PaletteOf(protect.Colors()).JS()) },
}).Parse(pageHTML))
