package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/fakes/faults"
	"github.com/syncdesk/syncdesk/sync/fakes/hubspot"
	"github.com/syncdesk/syncdesk/sync/fakes/salesforce"
	"github.com/syncdesk/syncdesk/sync/fakes/stripe"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// The presets against fakes of their providers, written from each
// provider's documentation (see sync/fakes), behind the faults every
// provider shows sooner or later.

// faultMix is one request in five going wrong, lost answers included.
var faultMix = faults.Options{Rate5xx: 0.05, Rate429: 0.04, RateHang: 0.03, RateLost: 0.08, RetryAfter: time.Second, HangFor: 5 * time.Second}

// presetWorld is one preset's service on a fake provider, with an engine.
type presetWorld struct {
	t      *testing.T
	db     *gorm.DB
	clock  *clock.Fake
	faults *faults.Injector
	svc    Service
	eng    *Engine
	log    *strings.Builder
	redact *redact.Redactor
}

// presetService loads a service as README shows it: the YAML under
// services.NAME, with base_url pointing at the fake.
func presetService(t *testing.T, name, yaml, baseURL string) config.Service {
	t.Helper()
	file := "services:\n  " + name + ":\n    base_url: " + baseURL + "\n    timeout: 300ms\n" +
		"    retry: {max_attempts: 10, base: 10ms, max: 100ms}\n" + yaml
	p := filepath.Join(t.TempDir(), "syncdesk.yaml")
	require.NoError(t, os.WriteFile(p, []byte(file), 0o600))
	cfg, err := config.Load(p, config.Overrides{})
	require.NoError(t, err, file)
	return cfg.Services[name]
}

func newPresetWorld(t *testing.T, db *gorm.DB, name, yaml string, fake http.Handler, clk *clock.Fake, opts faults.Options) *presetWorld {
	t.Helper()
	w := &presetWorld{t: t, db: db, clock: clk, faults: faults.New(opts), log: &strings.Builder{}, redact: redact.New(nil)}
	srv := httptest.NewServer(w.faults.Wrap(fake))
	t.Cleanup(srv.Close)
	cfg := presetService(t, name, yaml, srv.URL)
	w.svc = Service{Name: name, Config: cfg, Conn: connector.NewHTTP(name, cfg, w.redact, nil)}
	log := slog.New(redact.NewHandler(slog.NewTextHandler(w.log, &slog.HandlerOptions{Level: slog.LevelDebug}), w.redact))
	w.eng = New(db, []Service{w.svc}, clk, log, Options{Concurrency: 16})
	w.eng.SetRand(rand.New(rand.NewPCG(7, 8)))
	return w
}

// sendAll upserts n records and drains until none waits.
func (w *presetWorld) sendAll(typ string, n int, payload func(i int) string) {
	w.t.Helper()
	for i := 1; i <= n; i++ {
		_, err := w.eng.Upsert(context.Background(), typ, fmt.Sprint(i), []byte(payload(i)))
		require.NoError(w.t, err)
	}
	w.settle()
}

func (w *presetWorld) settle() {
	w.t.Helper()
	settle(w.t, w.db, w.eng, w.clock, time.Minute, 60)
}

// requireOneObjectEach checks the promise: every link success (or failed
// with a reason in words) and exactly one remote object per record.
func (w *presetWorld) requireOneObjectEach(n int, objects func(key string) int) {
	w.t.Helper()
	var links []models.Link
	require.NoError(w.t, w.db.Order("id").Find(&links).Error)
	require.Len(w.t, links, n)
	failed := 0
	for _, l := range links {
		switch l.Status {
		case models.StatusSuccess:
			require.NotEmpty(w.t, l.ExternalID, l.ExternalKey)
		case models.StatusFailed:
			failed++
			require.Regexp(w.t, `[a-z]{3,} [a-z]{3,}`, l.LastError, "a failed link says why in words")
		default:
			w.t.Fatalf("link %s is %s", l.ExternalKey, l.Status)
		}
		require.Equal(w.t, 1, objects(l.ExternalKey), "remote objects carrying %s (%s: %s)", l.ExternalKey, l.Status, l.LastError)
	}
	require.Zero(w.t, failed, "ten attempts outlast one fault in five")
	c := w.faults.Counts()
	require.Positive(w.t, c[faults.Lost], "lost answers were among the faults")
	w.t.Logf("faults: %v", c)
}

const hubspotYAML = `    preset: hubspot
    headers: {Authorization: "Bearer pat-na1-test"}
    objects:
      contact: {}
`

func hubspotFake(clk *clock.Fake, lag time.Duration, limit hubspot.Limit) *hubspot.Fake {
	return hubspot.New(hubspot.Options{Now: clk.Now, SearchLag: lag, Limit: limit,
		Properties: map[string][]hubspot.Property{"contacts": {{Name: "syncdesk_key", Unique: true}}}})
}

func contact(i int) string {
	return fmt.Sprintf(`{"email":"person%d@example.com","first_name":"Ada %d","last_name":"Lovelace"}`, i, i)
}

func TestHubSpotPresetMakesOneContactPerRecordThroughFaults(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(epoch)
		fake := hubspotFake(clk, 10*time.Second, hubspot.Limit{Max: 1_000_000, Window: 10 * time.Second})
		w := newPresetWorld(t, db, "hubspot", hubspotYAML, fake, clk, faultMix)
		w.sendAll("contact", 500, contact)
		w.requireOneObjectEach(500, func(key string) int { return fake.CountByProperty("contacts", "syncdesk_key", key) })
	})
}

// A lost create, then HubSpot's search still 10 s behind: whether the
// next attempt reads by the unique property (the preset) or searches (a
// configuration that does), no second contact is made — the unique
// property's 409 names the first, and the link adopts it.
func TestHubSpotSearchLagAfterALostCreateMakesNoDuplicate(t *testing.T) {
	search := strings.TrimSuffix(hubspotYAML, " {}\n") + `
        lookup: POST /crm/v3/objects/contacts/search
        lookup_consistency: eventual
        lookup_body: '{filterGroups: [{filters: [{propertyName: "syncdesk_key", operator: "EQ", value: $key}]}], properties: ["syncdesk_key"]}'
`
	for name, yaml := range map[string]string{"read by unique property": hubspotYAML, "search": search} {
		t.Run(name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				clk := clock.NewFake(epoch)
				fake := hubspotFake(clk, 10*time.Second, hubspot.Limit{Max: 1000, Window: 10 * time.Second})
				w := newPresetWorld(t, db, "hubspot", yaml, fake, clk, faults.Options{})
				w.faults.Script(faults.Lost)
				_, err := w.eng.Upsert(context.Background(), "contact", "1", []byte(contact(1)))
				require.NoError(t, err)
				require.NoError(t, w.eng.Drain(context.Background()))
				l := w.link("contact", "1")
				require.Equal(t, models.StatusRetry, l.Status, l.LastError)
				require.True(t, l.NeedsLookup)
				clk.Advance(time.Second) // well inside the search lag
				w.settle()
				l = w.link("contact", "1")
				require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
				require.Equal(t, 1, fake.CountByProperty("contacts", "syncdesk_key", l.ExternalKey))
				require.Equal(t, fake.Objects("contacts")[0].ID, l.ExternalID, "the first contact is adopted")
			})
		})
	}
}

func (w *presetWorld) link(typ, id string) models.Link {
	w.t.Helper()
	var l models.Link
	require.NoError(w.t, w.db.Where("local_type = ? AND local_id = ?", typ, id).Take(&l).Error)
	return l
}

const salesforceYAML = `    preset: salesforce
    auth: {client_id: syncdesk-app, client_secret: sf-secret-Q4v9xT2mLp}
    objects:
      account: {remote: Account}
`

func salesforceFake(t *testing.T, clk *clock.Fake) *salesforce.Server {
	fake, err := salesforce.New(salesforce.Options{Clock: clk,
		Objects: []salesforce.Object{{Name: "Account", Fields: []string{"Name", "Syncdesk_Key__c"}, ExternalIDs: []string{"Syncdesk_Key__c"}}},
		Clients: []salesforce.Client{{ID: "syncdesk-app", Secret: "sf-secret-Q4v9xT2mLp"}}})
	require.NoError(t, err)
	return fake
}

func account(i int) string { return fmt.Sprintf(`{"Name":"Acme %d"}`, i) }

func TestSalesforcePresetMakesOneAccountPerRecordThroughFaults(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(epoch)
		fake := salesforceFake(t, clk)
		w := newPresetWorld(t, db, "salesforce", salesforceYAML, fake, clk, faultMix)
		w.sendAll("account", 500, account)
		w.requireOneObjectEach(500, func(key string) int { return fake.CountByField("Account", "Syncdesk_Key__c", key) })
	})
}

// Salesforce's access token expires while a backlog is being sent: the 401s
// that follow (INVALID_SESSION_ID) make one refresh, shared by every
// worker, no link fails, and no token reaches an attempt row or the log.
func TestSalesforceTokenExpiringMidRunIsRefreshedOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(epoch)
		fake := salesforceFake(t, clk)
		tokens := map[string]bool{}
		var mu sync.Mutex
		seen := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				mu.Lock()
				tokens[tok] = true
				mu.Unlock()
			}
			fake.ServeHTTP(rw, r)
		})
		w := newPresetWorld(t, db, "salesforce", salesforceYAML, seen, clk, faults.Options{})
		w.sendAll("account", 100, account)
		require.Equal(t, 1, fake.TokenRequests())

		fake.ExpireTokens()
		w.sendAll("account", 200, func(i int) string { return fmt.Sprintf(`{"Name":"Acme %d (renamed)"}`, i) })
		require.Equal(t, 2, fake.TokenRequests(), "one refresh, however many workers saw the 401")

		var links []models.Link
		require.NoError(t, db.Find(&links).Error)
		require.Len(t, links, 200)
		for _, l := range links {
			require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		}
		var refused int64
		require.NoError(t, db.Model(&models.Attempt{}).Where("http_code = 401").Count(&refused).Error)
		require.Positive(t, refused, "the expired token was refused")

		var attempts []models.Attempt
		require.NoError(t, db.Find(&attempts).Error)
		require.Len(t, tokens, 2)
		for tok := range tokens {
			for _, a := range attempts {
				for _, s := range []string{a.RequestExcerpt, a.ResponseExcerpt, a.Error} {
					require.NotContains(t, s, tok, "attempt %d", a.ID)
				}
			}
			for _, l := range links {
				require.NotContains(t, l.LastError, tok)
			}
			require.NotContains(t, w.log.String(), tok)
		}
		require.NotContains(t, w.log.String(), "sf-secret-Q4v9xT2mLp")
	})
}

const stripeYAML = `    preset: stripe
    headers: {Authorization: "Bearer sk_test_syncdesk"}
    objects:
      customer: {}
      payment: {remote: payment_intent}
`

// Stripe replays a key's first answer for 24 hours and its search lags by a
// minute: a lost create is sent again with its key, never searched for, and
// the replay names the one object made. Only a create answered with a 5xx,
// which Stripe would replay, is searched for, and only once the search has
// had its minute.
func TestStripePresetMakesOneObjectPerRecordThroughFaults(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(epoch)
		fake := stripe.New(stripe.Options{Now: clk.Now})
		w := newPresetWorld(t, db, "stripe", stripeYAML, fake, clk, faultMix)
		for i := 1; i <= 250; i++ {
			_, err := w.eng.Upsert(context.Background(), "customer", fmt.Sprint(i), []byte(customer(i)))
			require.NoError(t, err)
			_, err = w.eng.Upsert(context.Background(), "payment", fmt.Sprint(i), []byte(fmt.Sprintf(`{"amount":%d,"currency":"eur"}`, 100+i)))
			require.NoError(t, err)
		}
		w.settle()
		w.requireOneObjectEach(500, func(key string) int {
			typ := stripe.Customer
			if strings.HasPrefix(key, "payment") {
				typ = stripe.PaymentIntent
			}
			return fake.CountByMetadata(typ, "syncdesk_key", key)
		})
		require.Positive(t, fake.Replays(), "lost creates were answered by replays")
		requireSearchesOnlyAfterA5xx(t, db)
	})
}

// requireSearchesOnlyAfterA5xx checks that every lookup followed a create
// answered with a 5xx, a minute or more after it, with nothing in between
// but searches that failed themselves (no answer, a 429 or a 5xx: the key
// is still spent, and the search is made again): no search right after an
// unknown outcome, which the key covers.
func requireSearchesOnlyAfterA5xx(t *testing.T, db *gorm.DB) {
	t.Helper()
	var lookups []models.Attempt
	require.NoError(t, db.Where("operation LIKE ?", "%.lookup").Find(&lookups).Error)
	for _, a := range lookups {
		var before models.Attempt
		for n := a.Number - 1; ; n-- {
			before = models.Attempt{} // a key set in it would be one more condition of the query
			require.NoError(t, db.Where("link_id = ? AND number = ?", a.LinkID, n).Take(&before).Error)
			if !strings.HasSuffix(before.Operation, ".lookup") {
				break
			}
			require.True(t, before.HTTPCode == 0 || before.HTTPCode == http.StatusTooManyRequests || before.HTTPCode >= 500,
				"a search of link %d after a search that answered %d", a.LinkID, before.HTTPCode)
		}
		require.True(t, strings.HasSuffix(before.Operation, ".create") && before.HTTPCode >= 500,
			"a search of link %d after %s answered %d", a.LinkID, before.Operation, before.HTTPCode)
		require.GreaterOrEqual(t, a.CreatedAt.Sub(before.CreatedAt), stripe.DefaultSearchLag)
	}
}

// Past the key's 24 hours Stripe has forgotten it: a link whose create is
// older is looked up by search first, and adopts what it finds — a key
// with a quote in it too (O'Brien), which the search query escapes.
func TestStripeCreateOlderThanTheKeyWindowIsSearchedFirst(t *testing.T) {
	for _, id := range []string{"1", "O'Brien"} {
		t.Run(id, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				clk := clock.NewFake(epoch)
				fake := stripe.New(stripe.Options{Now: clk.Now})
				w := newPresetWorld(t, db, "stripe", stripeYAML, fake, clk, faults.Options{})
				w.faults.Script(faults.Lost)
				_, err := w.eng.Upsert(context.Background(), "customer", id, []byte(customer(1)))
				require.NoError(t, err)
				require.NoError(t, w.eng.Drain(context.Background()))
				require.True(t, w.link("customer", id).NeedsLookup)

				clk.Advance(25 * time.Hour) // the key is forgotten; search has long caught up
				w.settle()
				l := w.link("customer", id)
				require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
				require.Equal(t, 1, fake.CountByMetadata(stripe.Customer, "syncdesk_key", l.ExternalKey))
				require.Equal(t, 1, fake.Requests()["GET /v1/customers/search"])
			})
		})
	}
}

// A create whose answer was lost, then the record deleted at once, while
// Stripe's search does not show the customer yet: the delete learns the
// customer's id by sending the create again with its key, which Stripe
// answers with the customer it made, and deletes it — rather than find
// nothing by search and leave it behind for good.
func TestStripeDeleteAfterALostCreateLeavesNoCustomer(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clk := clock.NewFake(epoch)
		fake := stripe.New(stripe.Options{Now: clk.Now})
		w := newPresetWorld(t, db, "stripe", stripeYAML, fake, clk, faults.Options{})
		w.faults.Script(faults.Lost)
		_, err := w.eng.Upsert(ctx, "customer", "1", []byte(customer(1)))
		require.NoError(t, err)
		require.NoError(t, w.eng.Drain(ctx))
		l := w.link("customer", "1")
		require.True(t, l.NeedsLookup)
		require.Equal(t, 1, fake.Creates(stripe.Customer), "the lost create reached Stripe")

		_, err = w.eng.Delete(ctx, "customer", "1")
		require.NoError(t, err)
		// The retry the lost create left waits for its backoff: a few
		// seconds, well within the search's lag of a minute.
		for i := 0; i < 20 && w.link("customer", "1").Status != models.StatusDeleted; i++ {
			clk.Advance(time.Second)
			require.NoError(t, w.eng.Drain(ctx))
		}
		require.Less(t, clk.Now().Sub(epoch), stripe.DefaultSearchLag)
		l = w.link("customer", "1")
		require.Equal(t, models.StatusDeleted, l.Status, l.LastError)
		require.Zero(t, fake.CountByMetadata(stripe.Customer, "syncdesk_key", l.ExternalKey), "no customer is left behind")
		require.Equal(t, 1, fake.Creates(stripe.Customer), "the create sent again was answered by a replay")
		require.Equal(t, 1, fake.Requests()["DELETE /v1/customers/{id}"])
	})
}

func customer(i int) string {
	return fmt.Sprintf(`{"email":"person%d@example.com","name":"Ada %d"}`, i, i)
}

// Two Salesforce records carry one key (the external-ID field is not
// unique): the upsert answers 300, and the link fails for a person, naming
// both records, without touching either.
func TestSalesforceSeveralRecordsWithTheKeyNeedAPerson(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(epoch)
		fake := salesforceFake(t, clk)
		var ids []string
		for _, name := range []string{"Acme (old)", "Acme (copy)"} {
			id, err := fake.Insert("Account", map[string]any{"Name": name, "Syncdesk_Key__c": "account_1"})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		w := newPresetWorld(t, db, "salesforce", salesforceYAML, fake, clk, faults.Options{})
		w.sendAll("account", 1, account)
		l := w.link("account", "1")
		require.Equal(t, models.StatusFailed, l.Status)
		require.Equal(t, "2 objects in salesforce carry the key account_1 (ids "+strings.Join(ids, ", ")+"): a person must decide which one to keep", l.LastError)
		require.Equal(t, 2, fake.CountByField("Account", "Syncdesk_Key__c", "account_1"))
		for _, r := range fake.Records("Account") {
			require.NotEqual(t, "Acme 1", r["Name"], "neither record was changed")
		}
	})
}
