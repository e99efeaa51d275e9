package callerauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

const appCheckAPI = "https://firebaseappcheck.googleapis.com"

// tokenConsumer consumes App Check tokens via the API's verifyAppCheckToken.
type tokenConsumer struct {
	client *http.Client
	url    string
}

// newTokenConsumer calls base (empty: Google's, with credentials) for project.
func newTokenConsumer(ctx context.Context, project, base string) (*tokenConsumer, error) {
	client := http.DefaultClient
	if base == "" {
		creds, err := google.FindDefaultCredentials(context.WithoutCancel(ctx), "https://www.googleapis.com/auth/cloud-platform")
		if err != nil {
			return nil, fmt.Errorf("credentials for the App Check API: %w", err)
		}
		if project == "" {
			project = creds.ProjectID
		}
		client, base = oauth2.NewClient(context.WithoutCancel(ctx), creds.TokenSource), appCheckAPI
	}
	if project == "" {
		return nil, errors.New("consuming App Check tokens needs the project ID: set GOOGLE_CLOUD_PROJECT")
	}
	return &tokenConsumer{client: client, url: base + "/v1beta/projects/" + url.PathEscape(project) + ":verifyAppCheckToken"}, nil
}

// consume marks token consumed; a reuse is Replayed.
func (c *tokenConsumer) consume(ctx context.Context, token string) error {
	already, err := c.call(ctx, token)
	switch {
	case err != nil:
		return &UnavailableError{Kind: AppCheckToken, Err: fmt.Errorf("consume the App Check token: %w", err)}
	case already:
		return &TokenError{Kind: AppCheckToken, Reason: Replayed}
	}
	return nil
}

// call POSTs token and returns the answer's alreadyConsumed.
func (c *tokenConsumer) call(ctx context.Context, token string) (bool, error) {
	body, err := json.Marshal(map[string]string{"app_check_token": token})
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return false, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("the App Check API answered %s: %.200s", resp.Status, raw)
	}
	var out struct {
		AlreadyConsumed bool `json:"alreadyConsumed"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return false, fmt.Errorf("the App Check API's answer: %w", err)
	}
	return out.AlreadyConsumed, nil
}
