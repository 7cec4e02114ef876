package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// The signers below follow each provider's published algorithm, written
// here apart from the verifier so that the tests check it against the
// documents, not against itself.
func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

const (
	stripeSecret   = "whsec_stripe_test_1"
	stripeSecret2  = "whsec_stripe_test_2"
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	githubSecret   = "gh-hook-secret"
	shopifySecret  = "shopify-secret"
	hmacSecret     = "generic-secret"
)

type signer func(body string, at time.Time) http.Header

// signedAt signs a delivery as its scheme's provider documents it, at a
// time; forged signs it with another secret.
func (d delivery) signedAt(at time.Time, forged bool) http.Header {
	secret := map[string]string{"stripe": stripeSecret, "github": githubSecret, "shopify": shopifySecret, "hmac": hmacSecret}[d.scheme]
	if forged {
		secret = "not-" + secret
	}
	body, ts := string(d.body), strconv.FormatInt(at.Unix(), 10)
	switch d.scheme {
	case "stripe":
		return http.Header{"Stripe-Signature": {"t=" + ts + ",v1=" + hex.EncodeToString(hmacSHA256([]byte(secret), ts+"."+body))}}
	case "standard":
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(standardSecret, "whsec_"))
		if forged {
			key = []byte("another key")
		}
		sig := base64.StdEncoding.EncodeToString(hmacSHA256(key, d.id+"."+ts+"."+body))
		return http.Header{"Webhook-Id": {d.id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {"v1," + sig}}
	case "github":
		return http.Header{"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(hmacSHA256([]byte(secret), body))},
			"X-Github-Delivery": {d.id}, "X-Github-Hook-Id": {"42"}, "X-Github-Event": {d.typ}}
	case "shopify":
		return http.Header{"X-Shopify-Hmac-Sha256": {base64.StdEncoding.EncodeToString(hmacSHA256([]byte(secret), body))},
			"X-Shopify-Webhook-Id": {d.id}, "X-Shopify-Topic": {d.typ}}
	}
	return http.Header{"X-Signature": {hex.EncodeToString(hmacSHA256([]byte(secret), ts+"."+body))},
		"X-Timestamp": {ts}, "X-Event-Id": {d.id}}
}

// signerFor signs bodies for a scheme with the id and type a provider of
// that scheme sends in its headers (Stripe's are in the body).
func signerFor(scheme, id, typ string) signer {
	return func(body string, at time.Time) http.Header {
		d := delivery{scheme: scheme, id: id, typ: typ, body: []byte(body)}
		if scheme == "standard" {
			d.id = "msg_" + strconv.Itoa(len(body))
		}
		return d.signedAt(at, false)
	}
}

var signers = map[string]signer{
	"stripe":   signerFor("stripe", "", ""),
	"standard": signerFor("standard", "", ""),
	"github":   signerFor("github", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "push"),
	"shopify":  signerFor("shopify", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "orders/create"),
	"hmac":     signerFor("hmac", "gen-1", ""),
}

func hookServices() map[string]config.Service {
	return map[string]config.Service{
		"stripe":   {Webhook: &config.Webhook{Scheme: "stripe", Secrets: []string{stripeSecret2, stripeSecret}, Effects: config.EffectSet("payments")}},
		"standard": {Webhook: &config.Webhook{Scheme: "standard", Secrets: []string{standardSecret}, Effects: config.EffectSet("crm")}},
		"github":   {Webhook: &config.Webhook{Scheme: "github", Secrets: []string{githubSecret}}},
		"shopify":  {Webhook: &config.Webhook{Scheme: "shopify", Secrets: []string{shopifySecret}}},
		"hmac": {Webhook: &config.Webhook{Scheme: "hmac", Secrets: []string{hmacSecret}, Header: "X-Signature", Encoding: "hex",
			TimestampHeader: "X-Timestamp", IDHeader: "X-Event-Id"}},
	}
}

// hookServer serves syncdesk with webhooks for every scheme, on a real clock
// (signatures carry real timestamps).
func hookServer(t *testing.T, db *gorm.DB) (*httptest.Server, *inbox.Receiver) {
	b := setup(t, db)
	// The receiver's clock stands still at hookNow and deliveries are signed
	// relative to it, so "301 s off" stays 301 s however slow the machine is.
	rc, err := inbox.New(db, hookServices(), clock.NewFake(hookNow), slog.New(slog.DiscardHandler), redact.New(nil))
	require.NoError(t, err)
	s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Log: slog.New(slog.DiscardHandler), Outbox: b.eng, Inbox: rc})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, rc
}

// hookNow is the time the webhook tests' receiver lives at.
var hookNow = time.Now().UTC()

type realClock struct{}

func (realClock) Now() time.Time { return time.Now().UTC() }

func post(t *testing.T, url, body string, h http.Header) (int, string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

func countEvents(t testing.TB, db *gorm.DB) int64 {
	var n int64
	require.NoError(t, db.Model(&models.ProcessedEvent{}).Count(&n).Error)
	return n
}

func TestEverySchemeAcceptsTheRealThingAndRefusesTheRest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		srv, _ := hookServer(t, db)
		for scheme, sign := range signers {
			t.Run(scheme, func(t *testing.T) {
				url := srv.URL + "/hooks/" + scheme
				body := fmt.Sprintf(`{"id":"evt_%s_1","type":"thing.happened","data":{"n":1}}`, scheme)
				now := hookNow
				before := countEvents(t, db)

				refuse := func(what string, b string, h http.Header) {
					t.Helper()
					code, out := post(t, url, b, h)
					require.True(t, code == 400 || code == 401, "%s: want 400/401, got %d %s", what, code, out)
					require.Equal(t, before, countEvents(t, db), "%s: nothing may be recorded", what)
				}
				refuse("one changed byte", strings.Replace(body, `"n":1`, `"n":2`, 1), sign(body, now))
				refuse("missing header", body, http.Header{})
				wrong := sign(body, now)
				for k, v := range wrong {
					if strings.Contains(strings.ToLower(k), "sig") || strings.Contains(k, "Hmac") {
						wrong[k] = []string{strings.Replace(v[0], v[0][len(v[0])-4:], "AAAA", 1)}
					}
				}
				refuse("wrong signature", body, wrong)
				if scheme == "stripe" || scheme == "standard" || scheme == "hmac" {
					refuse("301 s in the past", body, sign(body, now.Add(-301*time.Second)))
					refuse("301 s in the future", body, sign(body, now.Add(301*time.Second)))
				}

				code, out := post(t, url, body, sign(body, now))
				require.Equal(t, http.StatusOK, code, out)
				require.Contains(t, out, `"duplicate":false`)
				require.Equal(t, before+1, countEvents(t, db))
			})
		}
	})
}

func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	srv, _ := hookServer(t, db)
	body := `{"id":"evt_rot","type":"x"}`
	ts := strconv.FormatInt(hookNow.Unix(), 10)
	for i, secret := range []string{stripeSecret, stripeSecret2} {
		b := strings.Replace(body, "evt_rot", fmt.Sprintf("evt_rot_%d", i), 1)
		h := http.Header{"Stripe-Signature": {"t=" + ts + ",v1=" + hex.EncodeToString(hmacSHA256([]byte(secret), ts+"."+b))}}
		code, out := post(t, srv.URL+"/hooks/stripe", b, h)
		require.Equal(t, http.StatusOK, code, "secret %d: %s", i, out)
	}
	h := http.Header{"Stripe-Signature": {"t=" + ts + ",v1=" + hex.EncodeToString(hmacSHA256([]byte("whsec_other"), ts+"."+body))}}
	code, _ := post(t, srv.URL+"/hooks/stripe", body, h)
	require.Equal(t, http.StatusUnauthorized, code)
}

// 200 concurrent deliveries of one event: one processed row, one effect,
// 200 answers 2xx, no 5xx, a duplicate count of 199 — ten runs in a row.
func TestConcurrentDeliveriesOfOneEvent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		srv, rc := hookServer(t, db)
		var mu sync.Mutex
		effects := map[string]int{}
		rc.Handle("stripe", "payment.succeeded", func(_ context.Context, _ *gorm.DB, ev inbox.Event, _ time.Time) (string, error) {
			mu.Lock()
			effects[ev.ID]++
			mu.Unlock()
			return "counted", nil
		})
		for run := range 10 {
			id := fmt.Sprintf("evt_burst_%d", run)
			body := fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","data":{"object":{"id":"pay_1"}}}`, id)
			h := signers["stripe"](body, hookNow)
			var wg sync.WaitGroup
			codes := make(chan int, 200)
			for range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					code, _ := post(t, srv.URL+"/hooks/stripe", body, h)
					codes <- code
				}()
			}
			wg.Wait()
			close(codes)
			ok := 0
			for c := range codes {
				require.Equal(t, http.StatusOK, c, "run %d", run)
				ok++
			}
			require.Equal(t, 200, ok)
			require.Equal(t, 1, effects[id], "run %d: one effect", run)
			require.NoError(t, rc.Flush(context.Background())) // re-sends answered from a read are counted in memory
			ev, err := models.EventByID(db, "stripe", id)
			require.NoError(t, err)
			require.Equal(t, 199, ev.Duplicates, "run %d", run)
		}
		require.EqualValues(t, 10, countEvents(t, db))
	})
}

// Deliveries that Postgres refused mid-transaction (a 5xx the provider
// re-sends for days) and SQLite took get one answer on both databases: a
// 400 saying what no database can hold in the event id or type; else a 2xx
// and the event stored in a form both hold — an overlong id or type as its
// head and SHA-256, an object id that cannot be looked up as failed.
func TestUnstorableDeliveriesGetTheSameAnswerOnBothDatabases(t *testing.T) {
	t.Parallel()
	long := overlong(3000)
	refused := []struct {
		name string
		d    delivery
		says string
	}{
		{"a NUL in the event id", fuzzDelivery(0, "evt_\x00", "payment.succeeded", "pay_1", ""), "the event id contains a NUL character"},
		{"a NUL in the type", fuzzDelivery(0, "evt_t", "payment.\x00succeeded", "pay_1", ""), "the event type contains a NUL character"},
		{"invalid UTF-8 in a header's id", fuzzDelivery(2, "gh-\xff", "push", "", ""), "the event id is not valid UTF-8"},
		{"invalid UTF-8 in a header's type", fuzzDelivery(3, "shop-1", "orders/\xffcreate", "", ""), "the event type is not valid UTF-8"},
	}
	stored := []struct {
		name, outcome, note string
		d                   delivery
	}{
		{"a NUL in the payment's id", models.EventFailed, "the object's id at .data.object.id contains a NUL character",
			fuzzDelivery(0, "evt_nul_pay", "payment.succeeded", "pay_\x001", "")},
		{"a NUL in the deal's key", models.EventFailed, "the object's key at .data.external_key contains a NUL character",
			delivery{"standard", "msg_nul_key", "", []byte(`{"type":"deal.updated","data":{"id":"deal_1","external_key":"k\u0000"}}`)}},
		{"an overlong contact id", models.EventFailed, "the object's id at .data.id is longer than 1024 bytes",
			fuzzDelivery(1, "msg_long_contact", "contact.created", long, "")},
		{"an overlong event id", models.EventIgnored, "no effect", fuzzDelivery(0, long, "x.unknown", "pay_1", "")},
		{"another overlong id with the same head", models.EventIgnored, "no effect", fuzzDelivery(0, long[:2000]+"x", "x.unknown", "pay_1", "")},
		{"an overlong type", models.EventIgnored, "no effect", fuzzDelivery(4, "gen-long-type", long, "", "")},
		{"NUL and invalid UTF-8 after the body", models.EventIgnored, "no effect", fuzzDelivery(4, "gen-junk", "x", "", "\x00\xff")},
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := fuzzHandler(t, db)
		for _, c := range refused {
			code, out := c.d.send(h, true)
			require.Equal(t, http.StatusUnauthorized, code, "%s, forged: a bad signature is a 401 whatever the event holds: %s", c.name, out)
			code, out = c.d.send(h, false)
			require.Equal(t, http.StatusBadRequest, code, "%s: %s", c.name, out)
			require.Contains(t, out, c.says, c.name)
		}
		require.Zero(t, countEvents(t, db), "a refused delivery stores nothing")

		ids := map[string]bool{}
		for _, c := range stored {
			var res inbox.Result
			for i, duplicate := range []bool{false, true} {
				code, out := c.d.send(h, false)
				require.Equal(t, http.StatusOK, code, "%s, delivery %d: %s", c.name, i+1, out)
				require.NoError(t, json.Unmarshal([]byte(out), &res))
				require.Equal(t, duplicate, res.Duplicate, "%s, delivery %d", c.name, i+1)
			}
			ev, err := models.EventByID(db, c.d.scheme, res.EventID)
			require.NoError(t, err, c.name)
			require.Equal(t, c.outcome, ev.Outcome, c.name)
			require.Contains(t, ev.Error, c.note, c.name)
			require.LessOrEqual(t, len(ev.EventID)+len(ev.EventType), 600, "%s: the id and type fit an index entry", c.name)
			require.True(t, utf8.ValidString(ev.Payload) && !strings.ContainsRune(ev.Payload, 0), "%s: the payload is text", c.name)
			ids[res.EventID] = true
		}
		require.Len(t, ids, len(stored), "each delivery is its own event")
		require.EqualValues(t, len(stored), countEvents(t, db))
	})
}
