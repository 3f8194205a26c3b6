package github_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/mcpe-server/mcpe-server/adapters/github"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// printer is a Publisher that prints what it is given.
type printer struct{}

func (printer) Publish(_ context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	fmt.Println(ev.Type, ev.Metadata.Priority, ev.Metadata.SourceEventID)
	fmt.Println(" ", strings.Join(ev.Metadata.Tags, " "))
	fmt.Println(" ", string(ev.Data))
	return subscriptions.PublishResult{EventID: "5f0c6f5e-6a47-4a8e-9a52-3c1de3f0b001"}, nil
}

// A signed issues delivery becomes one github.issues.opened event, high
// priority because of its P1 label.
func Example() {
	secret := []byte("webhook-secret")
	a, err := github.New(github.Options{Publisher: printer{}, Secret: secret})
	if err != nil {
		panic(err)
	}
	body := `{"action": "opened",
	  "issue": {"number": 1347, "title": "Login fails with SSO enabled", "state": "open",
	    "html_url": "https://github.com/octo-org/octo-repo/issues/1347", "user": {"login": "octocat"},
	    "labels": [{"name": "bug"}, {"name": "P1"}], "assignees": [], "created_at": "2025-06-02T09:12:44Z"},
	  "repository": {"full_name": "octo-org/octo-repo", "html_url": "https://github.com/octo-org/octo-repo", "private": false},
	  "organization": {"login": "octo-org"}, "sender": {"login": "octocat"}}`
	r := httptest.NewRequest("POST", github.Endpoint, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", "issues")
	r.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	r.Header.Set("X-Hub-Signature-256", github.Signature(secret, []byte(body)))
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Body.String())
	// Output:
	// github.issues.opened high 72d3162e-cc78-11e3-81ab-4c9367dc0958
	//   repo:octo-org/octo-repo org:octo-org sender:octocat label:bug label:P1
	//   {"event":"issues","action":"opened","repository":{"full_name":"octo-org/octo-repo","html_url":"https://github.com/octo-org/octo-repo","private":false},"organization":"octo-org","sender":"octocat","issue":{"number":1347,"title":"Login fails with SSO enabled","state":"open","html_url":"https://github.com/octo-org/octo-repo/issues/1347","user":"octocat","labels":["bug","P1"],"assignees":[],"created_at":"2025-06-02T09:12:44Z"}}
	// 202 {"ids":["5f0c6f5e-6a47-4a8e-9a52-3c1de3f0b001"]}
}

// The signature GitHub's documentation gives as a test vector.
func ExampleSignature() {
	fmt.Println(github.Signature([]byte("It's a Secret to Everybody"), []byte("Hello, World!")))
	// Output:
	// sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17
}

// Label names are compared in this form, so "Priority: High" matches the
// key "priority high".
func ExampleNormalizeLabel() {
	for _, l := range []string{"Priority: High", "priority/critical-urgent", "P0"} {
		fmt.Printf("%q\n", github.NormalizeLabel(l))
	}
	// Output:
	// "priority high"
	// "priority critical urgent"
	// "p0"
}
