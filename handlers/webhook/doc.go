// Package webhook runs the "webhook" handler of subscriptions: it POSTs each
// delivery (an event, or a digest batch) as JSON to the URL the subscription
// names, signed per Standard Webhooks (https://www.standardwebhooks.com).
// The URL is chosen by a model, so it is treated as hostile.
//
// # Signing
//
// Every request carries the Standard Webhooks headers:
//
//	webhook-id:        msg_<subscription>_<job>  (the same for every attempt of a delivery)
//	webhook-timestamp: <unix seconds>      (the time of this attempt)
//	webhook-signature: v1,<base64 HMAC-SHA256>
//
// The HMAC key is the base64 text after the whsec_ prefix of the
// subscription's secret, and the signed content is
// "<webhook-id>.<webhook-timestamp>.<body>". After a secret rotation the
// previous secret also signs until its grace period ends: the header then
// holds two space-separated signatures, the current secret's first. A
// receiver accepts a request when any v1 signature matches one computed with
// its secret, comparing in constant time, and rejects a timestamp more than
// five minutes from its clock; Verify does exactly that. The body is sent
// byte for byte as signed: a receiver must verify the raw body before
// parsing it.
//
// Header values of the subscription may contain ${NAME}, filled from the
// operator's secrets (Options.Secrets); nothing else is expanded. A secret
// goes only to the URL prefixes the operator lists for it (Secret.URLs): a
// webhook elsewhere that names it is refused when the subscription is made
// and again before each send, with the words used for a name that does not
// exist, so that a model steered into sending the operator's token to its
// own receiver gets neither the token nor the names of secrets. The
// Standard Webhooks headers (any webhook-* name), content-type,
// content-length, content-encoding, host, expect and the hop-by-hop headers
// cannot be set by a subscription.
//
// # Retries
//
// A 2xx answer is a success. The attempt is retried after 5s, 30s, 2m, 10m
// or 30m (after attempts 1 to 5, each varied by up to ±20%), or after the
// answer's Retry-After when that is later (capped at 1h), when:
//
//   - the receiver answered 408, 425, 429 or 5xx;
//   - the request failed on the network or timed out.
//
// When the schedule is used up the delivery fails for good ("gave up after
// N attempts"). Another 4xx is retried only when it answered the first
// attempt, once (a receiver's misconfiguration may be fixed in between),
// then the delivery fails. A 410 Gone turns the handler off
// (Outcome.Disable). A 3xx fails the delivery without following the
// redirect: the subscription should name the final URL. A receiver address
// the server refuses (below) fails the delivery without a retry.
//
// # Server-side request forgery
//
// URLs must be https unless the operator sets Options.AllowHTTP, and may not
// carry user information or a fragment. The server resolves the host itself
// and connects only to addresses outside the special-purpose ranges of the
// IANA registries, unless the operator lists them in
// Options.AllowNetworks: unspecified and "this network" (0.0.0.0/8,
// ::), loopback (127.0.0.0/8, ::1), private (10/8, 172.16/12, 192.168/16),
// shared CGNAT space (100.64/10), link-local (169.254/16, including cloud
// metadata at 169.254.169.254, and fe80::/10), unique-local (fc00::/7),
// site-local (fec0::/10), multicast (224/4, ff00::/8), reserved (240/4) and
// broadcast, IETF protocol assignments (192.0.0/24, 2001::/23, including
// Teredo 2001::/32), documentation (192.0.2/24, 198.51.100/24, 203.0.113/24,
// 2001:db8::/32, 3fff::/20), benchmarking (198.18/15), 6to4 (192.88.99/24,
// 2002::/16), NAT64 (64:ff9b::/96, 64:ff9b:1::/48), discard-only (100::/64),
// segment-routing SIDs (5f00::/16) and every IPv6 address outside global
// unicast 2000::/3. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is checked
// as the IPv4 address it maps. A literal address in the URL is checked when
// the subscription is made; a host name when each connection is dialled,
// against every address it resolves to (so DNS rebinding gains nothing),
// and the socket's address is checked once more just before connecting.
// Proxies from the environment are ignored and redirects are not followed.
//
// # Endpoints verified without a challenge (SEP-3415)
//
// Before a SEP-3415 webhook subscription delivers to a new endpoint, the
// server confirms the endpoint wants the deliveries. Two ways need no
// challenge POST: the operator's Options.VerifiedURLs (Preverified), and a
// receiver document the callback URL's https origin publishes at
// WellKnownPath (ReceiverDeclares), fetched with a GET through the same
// guard as deliveries and cached per origin. The challenges and document
// lookups that are sent are rate-limited per destination host, whichever
// principals ask (AllowChallenge): 30 at once, then 30 a minute.
package webhook
