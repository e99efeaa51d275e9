package localstack

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/shardcount/counters/internal/manifest"
)

// appServer serves the live example app (web/app, web/dist/app.js) and forwards /api/<EntryPoint>
// to the functions, as a Firebase Hosting rewrite would.
type appServer struct {
	srv  *http.Server
	addr string
}

// appConfig is /config.json: what the page needs to reach the emulators.
type appConfig struct {
	ProjectID     string `json:"projectId"`
	FirestoreHost string `json:"firestoreHost"`
	FirestorePort int    `json:"firestorePort"`
	AuthURL       string `json:"authEmulatorUrl,omitempty"`
	APIPath       string `json:"apiPath"`
}

// startAppServer serves the example app on addr for the running stack s.
func startAppServer(s *Stack, addr string) (*appServer, error) {
	bundle := filepath.Join(s.Options.WebDir, "dist", "app.js")
	if _, err := os.Stat(bundle); err != nil {
		return nil, fmt.Errorf("the example app is not built (no %s): run `npm run build --prefix %s` (make run and make test do)", bundle, s.Options.WebDir)
	}
	fsHost, fsPort, _ := net.SplitHostPort(s.Emulators.Firestore.HostPort)
	port, _ := strconv.Atoi(fsPort)
	cfg := appConfig{ProjectID: s.Options.Project, FirestoreHost: fsHost, FirestorePort: port, APIPath: "/api/"}
	if s.Emulators.Auth != nil {
		cfg.AuthURL = "http://" + s.Emulators.Auth.HostPort
	}
	target, err := url.Parse(s.FunctionsURL)
	if err != nil {
		return nil, fmt.Errorf("functions URL: %w", err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	mux := http.NewServeMux()
	for _, name := range manifest.HTTPEntryPoints {
		mux.Handle("/api/"+name, http.StripPrefix("/api", proxy))
	}
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(cfg)
	})
	mux.Handle("/dist/", http.StripPrefix("/dist/", http.FileServer(http.Dir(filepath.Join(s.Options.WebDir, "dist")))))
	mux.Handle("/", http.FileServer(http.Dir(filepath.Join(s.Options.WebDir, "app"))))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("example app: %w", err)
	}
	a := &appServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, addr: l.Addr().String()}
	go func() { _ = a.srv.Serve(l) }()
	return a, nil
}

// URL is the example app's address.
func (a *appServer) URL() string { return "http://" + a.addr + "/" }

// stop closes the server.
func (a *appServer) stop() { _ = a.srv.Close() }
