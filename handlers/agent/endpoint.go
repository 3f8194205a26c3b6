package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxResponseBytes bounds the body of an endpoint's answer.
const maxResponseBytes = 4 << 20

// The chat-completions wire format, as far as this package uses it.
type (
	chatRequest struct {
		Model      string        `json:"model"`
		Messages   []chatMessage `json:"messages"`
		MaxTokens  int           `json:"max_tokens"`
		Tools      []chatTool    `json:"tools,omitempty"`
		ToolChoice string        `json:"tool_choice,omitempty"`
	}
	chatMessage struct {
		Role       string         `json:"role"`
		Content    string         `json:"content"`
		ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	chatTool struct {
		Type     string       `json:"type"`
		Function chatFunction `json:"function"`
	}
	chatFunction struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Parameters  any    `json:"parameters"`
	}
	chatToolCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function chatCall `json:"function"`
	}
	chatCall struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	chatResponse struct {
		Choices []struct {
			Message struct {
				// Content is a string, null, or (some servers) an
				// array of parts.
				Content   json.RawMessage `json:"content"`
				Refusal   string          `json:"refusal"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name string `json:"name"`
						// Arguments is a string of JSON, or (some
						// servers) the JSON itself.
						Arguments json.RawMessage `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
)

// endpointConv talks to the operator's OpenAI-compatible endpoint.
type endpointConv struct {
	ep            *Endpoint
	client        *http.Client // tests set their own
	maxRetryAfter time.Duration
	req           chatRequest
	calls         int
}

func newEndpointConv(ep *Endpoint, maxRetryAfter time.Duration, system, user string, maxTokens int, tools []*mcp.Tool) *endpointConv {
	c := &endpointConv{ep: ep, client: http.DefaultClient, maxRetryAfter: maxRetryAfter, req: chatRequest{
		Model:     ep.Model,
		Messages:  []chatMessage{{Role: "system", Content: system}, {Role: "user", Content: user}},
		MaxTokens: maxTokens,
	}}
	for _, t := range tools {
		c.req.Tools = append(c.req.Tools, chatTool{Type: "function", Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	return c
}

func (c *endpointConv) next(ctx context.Context, final bool) (*reply, error) {
	c.calls++
	c.req.ToolChoice = ""
	if final && len(c.req.Tools) > 0 {
		c.req.ToolChoice = "none"
	}
	resp, err := c.post(ctx)
	if err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 {
		if resp.Error != nil && resp.Error.Message != "" {
			return nil, fmt.Errorf("the LLM endpoint answered with an error: %s", clean(resp.Error.Message))
		}
		return nil, fmt.Errorf("the LLM endpoint's answer holds no choices")
	}
	msg := resp.Choices[0].Message
	r := &reply{text: contentText(msg.Content)}
	if r.text == "" && msg.Refusal != "" {
		r.text = "The model refused: " + msg.Refusal
	}
	if len(msg.ToolCalls) == 0 {
		return r, nil
	}
	echo := chatMessage{Role: "assistant", Content: r.text}
	for i, tc := range msg.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_mcpe_%d_%d", c.calls, i)
		}
		argText := string(tc.Function.Arguments)
		var s string
		if json.Unmarshal(tc.Function.Arguments, &s) == nil {
			argText = s
		}
		u := toolUse{id: id, name: tc.Function.Name}
		u.args, u.badArgs = readArgs([]byte(argText))
		r.uses = append(r.uses, u)
		echo.ToolCalls = append(echo.ToolCalls, chatToolCall{ID: id, Type: "function", Function: chatCall{Name: tc.Function.Name, Arguments: argText}})
	}
	c.req.Messages = append(c.req.Messages, echo)
	return r, nil
}

func (c *endpointConv) answer(results []toolResult) {
	for _, res := range results {
		text := res.text
		if res.isError {
			text = "Error: " + text
		}
		c.req.Messages = append(c.req.Messages, chatMessage{Role: "tool", ToolCallID: res.id, Content: text})
	}
}

// post sends the request and reads the answer.
func (c *endpointConv) post(ctx context.Context) (*chatResponse, error) {
	body, err := json.Marshal(&c.req)
	if err != nil {
		return nil, fmt.Errorf("encode the request to the LLM endpoint: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.ep.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("the LLM endpoint URL cannot be used: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if c.ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.ep.APIKey)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &passingError{err: fmt.Errorf("the LLM endpoint could not be reached: %w", err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &passingError{err: fmt.Errorf("read the LLM endpoint's answer: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := fmt.Errorf("the LLM endpoint answered %s: %s", resp.Status, clean(string(data)))
		if s := resp.StatusCode; s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500 {
			return nil, &passingError{err: err, retryAfter: min(retryAfter(resp.Header.Get("Retry-After")), c.maxRetryAfter)}
		}
		return nil, err
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("the LLM endpoint's answer is longer than %d bytes", maxResponseBytes)
	}
	var out chatResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("the LLM endpoint's answer is not chat-completions JSON (%v): %s", err, clean(string(data)))
	}
	return &out, nil
}

// contentText reads a message's content: a string, null, or an array of
// parts whose text parts are joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// retryAfter reads a Retry-After of delay-seconds; anything else is zero.
func retryAfter(v string) time.Duration {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 || n > int64(24*time.Hour/time.Second) {
		return 0
	}
	return time.Duration(n) * time.Second
}

// clean returns the start of an answer's body, fit for an error message:
// at most 200 bytes, control characters made spaces.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return truncate(strings.TrimSpace(s), 200)
}
