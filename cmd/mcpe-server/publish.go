package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// publish posts one event to a running server.
func publish(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpe-server publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	rawURL := fs.String("url", os.Getenv("MCPE_URL"), "server `URL`, e.g. http://127.0.0.1:8765 (default $MCPE_URL)")
	typ := fs.String("type", "", "event `TYPE`, e.g. deploy.failed")
	data := fs.String("data", "", "event data: a JSON object, @FILE, or - for stdin")
	priority := fs.String("priority", "", "low, normal, high or critical")
	var tags []string
	fs.Func("tag", "a tag; repeat for more", func(v string) error {
		tags = append(tags, v)
		return nil
	})
	sourceID := fs.String("source-id", "", "the event's `ID` at its source; the server accepts it once")
	timestamp := fs.String("timestamp", "", "when it happened, RFC 3339 (default: now)")
	token := fs.String("token", os.Getenv("MCPE_TOKEN"), "ingest bearer `TOKEN` (default $MCPE_TOKEN)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("publish: unexpected argument %q", fs.Arg(0))}
	}
	if *rawURL == "" {
		return usageError{errors.New("publish: --url is required (or set MCPE_URL), e.g. --url http://127.0.0.1:8765")}
	}
	endpoint, err := eventsURL(*rawURL)
	if err != nil {
		return usageError{err}
	}
	body, err := readData(*data, stdin)
	if err != nil {
		return usageError{err}
	}
	in := mcpe.EventInput{Type: *typ, Data: body}
	if *priority != "" || len(tags) > 0 || *sourceID != "" || *timestamp != "" {
		in.Metadata = &mcpe.MetadataInput{
			SourceEventID: *sourceID,
			Timestamp:     *timestamp,
			Priority:      mcpe.Priority(*priority),
			Tags:          tags,
		}
	}
	// Check locally with the server's own rules for a quicker, clearer error.
	if _, err := subscriptions.EventFromInput(in, time.Now()); err != nil {
		return usageError{fmt.Errorf("publish: %w", err)}
	}
	payload, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("publish: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusAccepted {
		var e httpapi.ErrorBody
		if json.Unmarshal(respBody, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("publish: server refused the event (%s, %s): %s", resp.Status, e.Error.Code, e.Error.Message)
		}
		return fmt.Errorf("publish: server answered %s: %s", resp.Status, strings.TrimSpace(string(respBody)))
	}
	var ok httpapi.IngestResponse
	if err := json.Unmarshal(respBody, &ok); err != nil {
		return fmt.Errorf("publish: unexpected answer: %s", respBody)
	}
	fmt.Fprintln(stdout, ok.ID)
	if ok.Duplicate {
		fmt.Fprintln(stderr, "mcpe-server: the server had already accepted this event (same source id); it was not routed again")
	}
	return nil
}

// eventsURL turns a server URL into its /v1/events URL.
func eventsURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("publish: --url %q is not an http(s) URL such as http://127.0.0.1:8765", raw)
	}
	if !strings.HasSuffix(u.Path, "/v1/events") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/events"
	}
	return u.String(), nil
}

// readData returns the --data value: inline JSON, @FILE or - for stdin.
func readData(v string, stdin io.Reader) (json.RawMessage, error) {
	switch {
	case v == "":
		return nil, nil
	case v == "-":
		return io.ReadAll(io.LimitReader(stdin, httpapi.MaxBodyBytes+1))
	case strings.HasPrefix(v, "@"):
		b, err := os.ReadFile(v[1:])
		if err != nil {
			return nil, fmt.Errorf("publish: --data: %w", err)
		}
		return b, nil
	}
	return json.RawMessage(v), nil
}
