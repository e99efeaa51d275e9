package extshards_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/internal/testenv"
)

// billing counts what Firestore bills a client for: a document read per document a get or query
// returns (a query that returns none bills one), a write per document written; and the writes to
// shard documents, each of which is one more trigger event.
type billing struct {
	reads, writes, shardWrites, rpcs atomic.Int64
	// applied and refused count the commits writing a main document: applied, or refused for its
	// version (FAILED_PRECONDITION).
	applied, refused atomic.Int64
}

func (b *billing) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	b.rpcs.Add(1)
	err := invoker(ctx, method, req, reply, cc, opts...)
	c, ok := req.(*firestorepb.CommitRequest)
	if !ok {
		return err
	}
	writesMain := false
	for _, w := range c.GetWrites() {
		name := w.GetUpdate().GetName() + w.GetDelete()
		shard := strings.Contains(name, "/"+extshards.ShardsCollection+"/")
		writesMain = writesMain || !shard
		if err == nil {
			b.writes.Add(1)
			if shard {
				b.shardWrites.Add(1)
			}
		}
	}
	switch {
	case writesMain && err == nil:
		b.applied.Add(1)
	case writesMain && status.Code(err) == codes.FailedPrecondition:
		b.refused.Add(1)
	}
	return err
}

func (b *billing) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	b.rpcs.Add(1)
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return s, err
	}
	return &countingStream{ClientStream: s, b: b}, nil
}

type countingStream struct {
	grpc.ClientStream
	b    *billing
	docs int
	done bool
}

func (s *countingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	switch r := m.(type) {
	case *firestorepb.BatchGetDocumentsResponse:
		if err == nil {
			s.b.reads.Add(1)
		}
	case *firestorepb.RunQueryResponse:
		if err == nil && r.GetDocument() != nil {
			s.docs++
			s.b.reads.Add(1)
		}
		if err != nil && !s.done {
			s.done = true
			if s.docs == 0 {
				s.b.reads.Add(1)
			}
		}
	}
	return err
}

// countedClient is a client of project on the emulator whose billable operations b counts.
func countedClient(t *testing.T, project string, b *billing) *firestore.Client {
	t.Helper()
	conn, err := grpc.NewClient(testenv.FirestoreEmulatorHost(t),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(ownerUnary, b.unary), grpc.WithChainStreamInterceptor(ownerStream, b.stream))
	if err != nil {
		t.Fatal(err)
	}
	client, err := firestore.NewClient(context.Background(), project, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func ownerUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer owner"), method, req, reply, cc, opts...)
}

func ownerStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer owner"), desc, cc, method, opts...)
}

// TestCostPer1000IncrementsGrowsWithWritesOnly is the cost harness of
// docs/migrate-from-firestore-counter.md: 1,000 increments written as the extension's clients write
// them (one shard write each), every write event handled as FoldExtensionShards does (a fold when the
// shard holds something), on one hot document and spread over 100 documents. It logs the reads,
// writes and invocations per 1,000 increments, asserts the design's bounds, and that nothing is read
// or written once the writes stop.
func TestCostPer1000IncrementsGrowsWithWritesOnly(t *testing.T) {
	for _, sc := range []struct {
		name            string
		docs, perClient int
	}{
		{"1 hot document, 100 clients x 10", 1, 10},
		{"100 documents, 10 clients each x 1", 100, 1},
	} {
		t.Run(sc.name, func(t *testing.T) {
			project := testenv.NewProjectID()
			writer := testenv.FirestoreOf(t, project)
			var b billing
			folder := newFolder(countedClient(t, project, &b), time.Second)
			ctx := context.Background()
			clients := 1000 / sc.docs / sc.perClient
			var wg sync.WaitGroup
			for d := range sc.docs {
				createMain(t, writer, fmt.Sprintf("posts/p%d", d))
			}
			start := time.Now()
			for d := range sc.docs {
				doc := fmt.Sprintf("posts/p%d", d)
				for c := range clients {
					wg.Go(func() {
						for range sc.perClient {
							if err := incrementShard(ctx, writer, doc, fmt.Sprintf("client-%d", c), map[string]int64{"likes": 1}); err != nil {
								t.Error(err)
								return
							}
							wg.Go(func() {
								if _, err := folder.Fold(ctx, doc); err != nil {
									t.Error(err)
								}
							})
						}
					})
				}
			}
			wg.Wait()
			elapsed := time.Since(start)
			var total int64
			for d := range sc.docs {
				snap, err := writer.Doc(fmt.Sprintf("posts/p%d", d)).Get(ctx)
				if err != nil {
					t.Fatal(err)
				}
				total += snap.Data()["likes"].(int64)
			}
			if total != 1000 {
				t.Fatalf("folded %d increments, want 1000", total)
			}
			reads, writes := b.reads.Load(), b.writes.Load()
			invocations := 1000 + b.shardWrites.Load() // an event per client write and per fold write of a shard
			t.Logf("per 1,000 increments over %v: client writes 1000; fold reads %d, fold writes %d (main %d, shards %d); invocations %d (%d with a fold)",
				elapsed.Round(time.Millisecond), reads, writes, writes-b.shardWrites.Load(), b.shardWrites.Load(), invocations, 1000)
			// Bounds: each shard written is read by a fold at most a few times, and emptied and deleted once.
			if reads > 4000 || writes > 2200 {
				t.Errorf("reads %d, writes %d per 1,000 increments: more than the design's bounds (4,000, 2,200)", reads, writes)
			}
			rpcs := b.rpcs.Load()
			time.Sleep(3 * time.Second)
			if idle := b.rpcs.Load() - rpcs; idle != 0 {
				t.Errorf("%d Firestore calls in the 3 s after the writes stopped, want none", idle)
			}
		})
	}
}
