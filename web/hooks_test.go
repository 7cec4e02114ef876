package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

var signers = map[string]signer{
	"stripe": func(body string, at time.Time) http.Header {
		ts := strconv.FormatInt(at.Unix(), 10)
		return http.Header{"Stripe-Signature": {"t=" + ts + ",v1=" + hex.EncodeToString(hmacSHA256([]byte(stripeSecret), ts+"."+body))}}
	},
	"standard": func(body string, at time.Time) http.Header {
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(standardSecret, "whsec_"))
		id, ts := "msg_"+strconv.Itoa(len(body)), strconv.FormatInt(at.Unix(), 10)
		sig := base64.StdEncoding.EncodeToString(hmacSHA256(key, id+"."+ts+"."+body))
		return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {"v1," + sig}}
	},
	"github": func(body string, _ time.Time) http.Header {
		return http.Header{"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(hmacSHA256([]byte(githubSecret), body))},
			"X-Github-Delivery": {"72d3162e-cc78-11e3-81ab-4c9367dc0958"}, "X-Github-Hook-Id": {"42"}, "X-Github-Event": {"push"}}
	},
	"shopify": func(body string, _ time.Time) http.Header {
		return http.Header{"X-Shopify-Hmac-Sha256": {base64.StdEncoding.EncodeToString(hmacSHA256([]byte(shopifySecret), body))},
			"X-Shopify-Webhook-Id": {"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"}, "X-Shopify-Topic": {"orders/create"}}
	},
	"hmac": func(body string, at time.Time) http.Header {
		ts := strconv.FormatInt(at.Unix(), 10)
		return http.Header{"X-Signature": {hex.EncodeToString(hmacSHA256([]byte(hmacSecret), ts+"."+body))},
			"X-Timestamp": {ts}, "X-Event-Id": {"gen-1"}}
	},
}

func hookServices() map[string]config.Service {
	return map[string]config.Service{
		"stripe":   {Webhook: &config.Webhook{Scheme: "stripe", Secrets: []string{stripeSecret2, stripeSecret}, Effects: "payments"}},
		"standard": {Webhook: &config.Webhook{Scheme: "standard", Secrets: []string{standardSecret}, Effects: "crm"}},
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

func countEvents(t *testing.T, db *gorm.DB) int64 {
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
			ev, err := models.EventByID(db, "stripe", id)
			require.NoError(t, err)
			require.Equal(t, 199, ev.Duplicates, "run %d", run)
		}
		require.EqualValues(t, 10, countEvents(t, db))
	})
}
