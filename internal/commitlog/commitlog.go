// Package commitlog records, as JSON lines, every document write an emulator Firestore client
// commits, so load reports count what was really written.
package commitlog

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// EnvPath names the variable holding the commit log's path (local stack only).
const EnvPath = "COMMIT_LOG"

// Commit is one successful commit: its commit time (for a BatchWrite, when it returned) and the
// paths it wrote, relative to the database (counters/likes/shards/3).
type Commit struct {
	Time time.Time `json:"t"`
	Docs []string  `json:"docs"`
}

// Recorder writes a Commit line for every successful Commit or BatchWrite RPC.
type Recorder struct {
	mu sync.Mutex
	w  io.Writer
}

// NewRecorder records to w.
func NewRecorder(w io.Writer) *Recorder { return &Recorder{w: w} }

// intercept is a gRPC unary interceptor recording successful writes.
func (r *Recorder) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil {
		return err
	}
	var writes []*firestorepb.Write
	switch req := req.(type) {
	case *firestorepb.CommitRequest:
		writes = req.GetWrites()
	case *firestorepb.BatchWriteRequest:
		writes = req.GetWrites()
	default:
		return nil
	}
	c := Commit{Time: time.Now()}
	if resp, ok := reply.(*firestorepb.CommitResponse); ok && resp.GetCommitTime() != nil {
		c.Time = resp.GetCommitTime().AsTime() // free of network jitter
	}
	for _, w := range writes {
		name := w.GetUpdate().GetName()
		if name == "" {
			name = w.GetDelete()
		}
		if name == "" {
			name = w.GetTransform().GetDocument()
		}
		_, rel, _ := strings.Cut(name, "/documents/")
		c.Docs = append(c.Docs, rel)
	}
	if len(c.Docs) == 0 {
		return nil
	}
	line, _ := json.Marshal(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.w.Write(append(line, '\n'))
	return nil
}

// EmulatorOption connects a Firestore client to the emulator at host, recording every commit.
func (r *Recorder) EmulatorOption(host string) (option.ClientOption, error) {
	conn, err := grpc.NewClient(host,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulatorOwner{}),
		grpc.WithUnaryInterceptor(r.intercept),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to the Firestore emulator at %s: %w", host, err)
	}
	return option.WithGRPCConn(conn), nil
}

// OptionFromEnv returns an option appending every commit to the file $COMMIT_LOG names, or nil if
// unset. Without FIRESTORE_EMULATOR_HOST it is an error.
func OptionFromEnv() (option.ClientOption, error) {
	path := os.Getenv(EnvPath)
	if path == "" {
		return nil, nil
	}
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	if host == "" {
		return nil, fmt.Errorf("%s is for the local stack: it needs FIRESTORE_EMULATOR_HOST", EnvPath)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPath, err)
	}
	return NewRecorder(f).EmulatorOption(host)
}

// emulatorOwner authenticates as the emulator's owner, bypassing security rules.
type emulatorOwner struct{}

func (emulatorOwner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

func (emulatorOwner) RequireTransportSecurity() bool { return false }

// ReadFile parses the commit log at path.
func ReadFile(path string) ([]Commit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("commit log: %w", err)
	}
	defer f.Close()
	return Read(f)
}

// Read parses a commit log.
func Read(r io.Reader) ([]Commit, error) {
	var commits []Commit
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		var c Commit
		if err := json.Unmarshal(scanner.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("commit log line %d: %w", len(commits)+1, err)
		}
		commits = append(commits, c)
	}
	return commits, scanner.Err()
}
