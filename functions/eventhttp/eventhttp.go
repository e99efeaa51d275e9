// Package eventhttp serves CloudEvent functions as HTTP handlers, decoding in the request's
// goroutine (docs/design.md, "Event delivery").
//
// Not a supported import: see package counters.
package eventhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// MaxBodyBytes bounds a delivery's body.
const MaxBodyBytes = 16 << 20

// EventPubSubMessagePublished is the CloudEvent type of a Pub/Sub message.
const EventPubSubMessagePublished = "google.cloud.pubsub.topic.v1.messagePublished"

// EventFirestoreDocWritten is the CloudEvent type of a Firestore document write.
const EventFirestoreDocWritten = "google.cloud.firestore.document.v1.written"

// Func is a CloudEvent function; an error asks for redelivery.
type Func func(context.Context, event.Event) error

// Handler serves fn: 200 on nil, 500 (redeliver) on error. An undecodable delivery gets 200
// and an ERROR line on log.
func Handler(fn Func, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			answer(w, http.StatusMethodNotAllowed, "CloudEvents are delivered with POST")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			acknowledgeUndecodable(w, r, log, fmt.Errorf("the body is larger than %d bytes", MaxBodyBytes))
			return
		case err != nil:
			// The sender went away mid-body; it will deliver again.
			answer(w, http.StatusBadRequest, "the body could not be read")
			return
		}
		e, err := Decode(r, body)
		if err != nil {
			acknowledgeUndecodable(w, r, log, err)
			return
		}
		if err := fn(r.Context(), *e); err != nil {
			answer(w, http.StatusInternalServerError, "the event was not handled; deliver it again")
			return
		}
		answer(w, http.StatusOK, "")
	})
}

// Decode reads r's binary or structured CloudEvent, or Pub/Sub push envelope; body is r's.
func Decode(r *http.Request, body []byte) (*event.Event, error) {
	if r.Header.Get("Ce-Id") == "" && !strings.Contains(r.Header.Get("Content-Type"), "cloudevents") {
		return fromPushEnvelope(r.URL.Path, body)
	}
	e, err := binding.ToEvent(r.Context(), cehttp.NewMessage(r.Header, io.NopCloser(bytes.NewReader(body))))
	if err != nil {
		return nil, fmt.Errorf("decode CloudEvent: %w", err)
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("invalid CloudEvent: %w", err)
	}
	return e, nil
}

// PushEnvelope is a Pub/Sub push body and a messagePublished event's data.
type PushEnvelope struct {
	Message      PubSubMessage `json:"message"`
	Subscription string        `json:"subscription"`
}

// PubSubMessage is the message of a PushEnvelope.
type PubSubMessage struct {
	// Data is base64 in JSON; a []byte encodes and decodes it.
	Data        []byte            `json:"data"`
	Attributes  map[string]string `json:"attributes,omitempty"`
	MessageID   string            `json:"messageId"`
	PublishTime time.Time         `json:"publishTime"`
}

// topicInPath finds the topic in a push endpoint's path.
var topicInPath = regexp.MustCompile(`projects/[^/?]+/topics/[^/?]+`)

// fromPushEnvelope makes a push envelope's messagePublished event, as Eventarc does.
func fromPushEnvelope(path string, body []byte) (*event.Event, error) {
	var env PushEnvelope
	if err := json.Unmarshal(body, &env); err != nil || env.Message.MessageID == "" {
		return nil, fmt.Errorf("the request is neither a CloudEvent nor a Pub/Sub push envelope (no ce-id header, Content-Type not CloudEvents, body without a message)")
	}
	topic := topicInPath.FindString(path)
	if topic == "" {
		return nil, fmt.Errorf("a Pub/Sub push envelope must be delivered to a path naming its topic (.../projects/P/topics/T), not %q", path)
	}
	e := event.New()
	e.SetID(env.Message.MessageID)
	e.SetSource("//pubsub.googleapis.com/" + topic)
	e.SetType(EventPubSubMessagePublished)
	if !env.Message.PublishTime.IsZero() {
		e.SetTime(env.Message.PublishTime)
	}
	if err := e.SetData(event.ApplicationJSON, json.RawMessage(body)); err != nil {
		return nil, fmt.Errorf("push envelope: %w", err)
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("push envelope: %w", err)
	}
	return &e, nil
}

// acknowledgeUndecodable answers 200 and logs err at ERROR.
func acknowledgeUndecodable(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	log.ErrorContext(r.Context(), "delivery is not a usable CloudEvent; acknowledged without handling it",
		"path", r.URL.Path, "content_type", r.Header.Get("Content-Type"), "ce_id", r.Header.Get("Ce-Id"), "reason", err.Error())
	answer(w, http.StatusOK, "")
}

// answer writes status and msg with a Content-Length.
func answer(w http.ResponseWriter, status int, msg string) {
	if msg != "" {
		msg += "\n"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(msg)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}
