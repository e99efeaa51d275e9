// Package commitlog records, as JSON lines, every document write an emulator Firestore client
// commits, and optionally what it reads, so load reports count what was really written and read.
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

// EnvPath names the variable holding the commit log's path (local stack only); EnvReadsPath the
// read log's.
const (
	EnvPath      = "COMMIT_LOG"
	EnvReadsPath = "READ_LOG"
)

// Commit is one successful commit: its commit time (for a BatchWrite, when it returned) and the
// paths it wrote, relative to the database (counters/likes/shards/3).
type Commit struct {
	Time time.Time `json:"t"`
	Docs []string  `json:"docs"`
}

// Recorder writes a Commit line for every successful Commit or BatchWrite RPC and, with
// RecordReads, one per read RPC whose Docs are what Firestore bills as reads: each document
// returned or looked up missing, and a query's collection for a query that returns nothing and for
// an aggregation (one read per 1,000 index entries: here, once).
type Recorder struct {
	mu    sync.Mutex
	w     io.Writer
	reads io.Writer
}

// NewRecorder records to w.
func NewRecorder(w io.Writer) *Recorder { return &Recorder{w: w} }

// RecordReads records reads to w too.
func (r *Recorder) RecordReads(w io.Writer) *Recorder {
	r.reads = w
	return r
}

// write appends c to w as a line.
func (r *Recorder) write(w io.Writer, c Commit) {
	line, _ := json.Marshal(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = w.Write(append(line, '\n'))
}

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
		c.Docs = append(c.Docs, relative(name))
	}
	if len(c.Docs) != 0 {
		r.write(r.w, c)
	}
	return nil
}

// relative is a resource name's path below the database ("" for the database's root).
func relative(name string) string {
	_, rel, _ := strings.Cut(name, "/documents/")
	return rel
}

// interceptStream is a gRPC stream interceptor recording the reads of the read RPCs.
func (r *Recorder) interceptStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	switch method {
	case "/google.firestore.v1.Firestore/BatchGetDocuments", "/google.firestore.v1.Firestore/RunQuery", "/google.firestore.v1.Firestore/RunAggregationQuery":
	default:
		return streamer(ctx, desc, cc, method, opts...)
	}
	if r.reads == nil {
		return streamer(ctx, desc, cc, method, opts...)
	}
	ctx, cancel := context.WithCancel(ctx)
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &readStream{ClientStream: cs, end: cancel}
	// The stream ends read to its end (RecvMsg's error ends ctx) or abandoned (the caller's ctx).
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.query != "" && (s.aggregation || len(s.docs) == 0) {
			s.docs = append(s.docs, s.query)
		}
		if len(s.docs) != 0 {
			r.write(r.reads, Commit{Time: time.Now(), Docs: s.docs})
		}
	}()
	return s, nil
}

// readStream notes the documents a read RPC returns.
type readStream struct {
	grpc.ClientStream
	mu sync.Mutex
	// query is a query's collection (its parent's path and collection ID).
	query       string
	aggregation bool
	docs        []string
	end         context.CancelFunc
}

func (s *readStream) SendMsg(m any) error {
	var q *firestorepb.StructuredQuery
	var parent string
	s.mu.Lock()
	switch m := m.(type) {
	case *firestorepb.RunQueryRequest:
		q, parent = m.GetStructuredQuery(), m.GetParent()
	case *firestorepb.RunAggregationQueryRequest:
		q, parent, s.aggregation = m.GetStructuredAggregationQuery().GetStructuredQuery(), m.GetParent(), true
	}
	if from := q.GetFrom(); len(from) != 0 {
		s.query = strings.TrimPrefix(relative(parent)+"/"+from[0].GetCollectionId(), "/")
	}
	s.mu.Unlock()
	return s.ClientStream.SendMsg(m)
}

func (s *readStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.end()
		return err
	}
	var name string
	switch m := m.(type) {
	case *firestorepb.BatchGetDocumentsResponse:
		name = m.GetFound().GetName()
		if name == "" {
			name = m.GetMissing()
		}
	case *firestorepb.RunQueryResponse:
		name = m.GetDocument().GetName()
	}
	if name != "" {
		s.mu.Lock()
		s.docs = append(s.docs, relative(name))
		s.mu.Unlock()
	}
	return nil
}

// EmulatorOption connects a Firestore client to the emulator at host, recording every commit.
func (r *Recorder) EmulatorOption(host string) (option.ClientOption, error) {
	conn, err := grpc.NewClient(host,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulatorOwner{}),
		grpc.WithUnaryInterceptor(r.intercept),
		grpc.WithStreamInterceptor(r.interceptStream),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to the Firestore emulator at %s: %w", host, err)
	}
	return option.WithGRPCConn(conn), nil
}

// OptionFromEnv returns an option appending every commit to the file $COMMIT_LOG names (and
// reads to $READ_LOG's, if set), or nil if COMMIT_LOG is unset. Without FIRESTORE_EMULATOR_HOST it
// is an error.
func OptionFromEnv() (option.ClientOption, error) {
	path := os.Getenv(EnvPath)
	if path == "" {
		return nil, nil
	}
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	if host == "" {
		return nil, fmt.Errorf("%s is for the local stack: it needs FIRESTORE_EMULATOR_HOST", EnvPath)
	}
	f, err := appendTo(EnvPath, path)
	if err != nil {
		return nil, err
	}
	r := NewRecorder(f)
	if readsPath := os.Getenv(EnvReadsPath); readsPath != "" {
		reads, err := appendTo(EnvReadsPath, readsPath)
		if err != nil {
			return nil, err
		}
		r.RecordReads(reads)
	}
	return r.EmulatorOption(host)
}

// appendTo opens the file path, which variable names, for appending.
func appendTo(variable, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", variable, err)
	}
	return f, nil
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
