package webhook_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/mcpe-server/mcpe-server/handlers/webhook"
)

// A receiver verifies the raw body before parsing it.
func ExampleVerify() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // as returned in handler.secret
	receive := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header, body, time.Unix(1614265400, 0)); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		// webhook-id is the same for every attempt: use it to skip
		// deliveries already processed.
		fmt.Println("verified", r.Header.Get("webhook-id"), string(body))
		w.WriteHeader(http.StatusNoContent)
	}

	// A delivery as the server sends it.
	body := []byte(`{"test": 2432232314}`)
	sig, _ := webhook.Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), body)
	r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	r.Header.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	r.Header.Set("webhook-timestamp", "1614265330")
	r.Header.Set("webhook-signature", sig)
	w := httptest.NewRecorder()
	receive(w, r)
	fmt.Println(sig)
	fmt.Println(w.Code)
	// Output:
	// verified msg_p5jXN8AQM9LWM0D4loKWxJek {"test": 2432232314}
	// v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
	// 204
}
