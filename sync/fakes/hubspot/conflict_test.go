package hubspot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/fakes/faults"
)

var existingID = regexp.MustCompile(`Existing ID: (\d+)$`)

// requireConflict checks a 409 in HubSpot's shape and returns the id it
// names, which must be the same in the message and in context.existingId.
func requireConflict(t *testing.T, a answer, singular, prop string) string {
	t.Helper()
	require.Equal(t, http.StatusConflict, a.status, a.raw)
	require.Equal(t, "error", a.body["status"])
	require.Equal(t, "CONFLICT", a.body["category"])
	msg := a.body["message"].(string)
	require.True(t, strings.HasPrefix(msg, singular+" already exists. Existing ID: "), msg)
	m := existingID.FindStringSubmatch(msg)
	require.NotNil(t, m, msg)
	ctx := a.body["context"].(map[string]any)
	require.Equal(t, []any{m[1]}, ctx["existingId"])
	detail := a.body["errors"].([]any)[0].(map[string]any)
	require.Equal(t, prop, detail["in"])
	require.True(t, strings.HasSuffix(detail["message"].(string), "Existing ID: "+m[1]), detail["message"])
	return m[1]
}

// A second create with a taken unique value is refused with 409 naming the
// object that holds it: contacts' email, and a custom unique property on
// every type.
func TestTakenUniqueValueIs409NamingTheExistingID(t *testing.T) {
	b := setup(t, Options{})
	first := b.call(t, http.MethodPost, "/crm/v3/objects/contacts", props("email", "ada@example.com"))
	require.Equal(t, http.StatusCreated, first.status)
	again := b.call(t, http.MethodPost, "/crm/v3/objects/contacts", props("email", "ADA@example.com", "firstname", "Ada"))
	require.Equal(t, first.body["id"], requireConflict(t, again, "Contact", "email"))
	require.Contains(t, again.body["errors"].([]any)[0].(map[string]any)["message"], "A contact with email ADA@example.com already exists")

	for typ, singular := range map[string]string{"contacts": "Contact", "companies": "Company", "deals": "Deal"} {
		first := b.call(t, http.MethodPost, "/crm/v3/objects/"+typ, props("syncdesk_key", "k-1"))
		require.Equal(t, http.StatusCreated, first.status, first.raw)
		again := b.call(t, http.MethodPost, "/crm/v3/objects/"+typ, props("syncdesk_key", "k-1"))
		require.Equal(t, first.body["id"], requireConflict(t, again, singular, "syncdesk_key"), typ)
		require.Equal(t, 1, b.fake.CountByProperty(typ, "syncdesk_key", "k-1"), typ)
	}
	require.Equal(t, 4, b.fake.Stats().Creates)
	require.Equal(t, 4, b.fake.Stats().Conflicts)

	// An empty value holds nothing: many objects may leave it unset.
	for range 2 {
		require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/crm/v3/objects/deals", props("syncdesk_key", "")).status)
	}
}

// An update may not take a value another object holds, and may keep its
// own.
func TestUpdateToTakenValueIs409(t *testing.T) {
	b := setup(t, Options{})
	one := b.call(t, http.MethodPost, "/crm/v3/objects/companies", props("syncdesk_key", "a"))
	two := b.call(t, http.MethodPost, "/crm/v3/objects/companies", props("syncdesk_key", "b"))
	clash := b.call(t, http.MethodPatch, "/crm/v3/objects/companies/b?idProperty=syncdesk_key", props("syncdesk_key", "a"))
	require.Equal(t, one.body["id"], requireConflict(t, clash, "Company", "syncdesk_key"))
	require.Equal(t, "b", b.fake.Objects("companies")[1].Properties["syncdesk_key"], "a refused update changes nothing")

	same := b.call(t, http.MethodPatch, "/crm/v3/objects/companies/"+two.body["id"].(string), props("syncdesk_key", "b", "name", "Two"))
	require.Equal(t, http.StatusOK, same.status, same.raw)
}

// Fifty simultaneous creates with one unique value make exactly one object;
// the other 49 each get 409 naming it.
func TestConcurrentCreatesMakeOneObject(t *testing.T) {
	b := setup(t, Options{})
	const n = 50
	answers := make([]answer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i], errs[i] = b.send(testToken, http.MethodPost, "/crm/v3/objects/contacts", props("syncdesk_key", "same", "email", "x@example.com"))
		})
	}
	close(start)
	wg.Wait()

	objs := b.fake.Objects("contacts")
	require.Len(t, objs, 1)
	created, conflicts := 0, 0
	for i, a := range answers {
		require.NoError(t, errs[i])
		switch a.status {
		case http.StatusCreated:
			created++
			require.Equal(t, objs[0].ID, a.body["id"])
		case http.StatusConflict:
			conflicts++
			require.Equal(t, objs[0].ID, existingID.FindStringSubmatch(a.body["message"].(string))[1])
		default:
			t.Fatalf("answer %d: %d %s", i, a.status, a.raw)
		}
	}
	require.Equal(t, 1, created)
	require.Equal(t, n-1, conflicts)
	require.Equal(t, 1, b.fake.CountByProperty("contacts", "syncdesk_key", "same"))
	require.Equal(t, Stats{Creates: 1, Conflicts: n - 1, Requests: map[string]int{"POST /crm/v3/objects/contacts": n}}, b.fake.Stats())
}

// Behind the fault injector a create whose answer is lost was still made:
// the retry is refused with 409 naming it, so the caller can adopt it
// instead of making a second object.
func TestLostCreateStillCommits(t *testing.T) {
	b := setup(t, Options{})
	in := faults.New(faults.Options{Answer: Answer})
	srv := httptest.NewServer(in.Wrap(b.fake))
	defer srv.Close()
	b.srv = srv

	in.Script(faults.Lost, faults.TooMany, faults.None)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/crm/v3/objects/deals", strings.NewReader(`{"properties":{"syncdesk_key":"r-1"}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	_, err = srv.Client().Do(req)
	require.Error(t, err, "the answer is lost")
	objs := b.fake.Objects("deals")
	require.Len(t, objs, 1, "but the deal was made")

	limited := b.call(t, http.MethodPost, "/crm/v3/objects/deals", props("syncdesk_key", "r-1"))
	require.Equal(t, http.StatusTooManyRequests, limited.status)
	require.Equal(t, "RATE_LIMIT", limited.body["errorType"], "an injected 429 speaks HubSpot")

	retry := b.call(t, http.MethodPost, "/crm/v3/objects/deals", props("syncdesk_key", "r-1"))
	require.Equal(t, objs[0].ID, requireConflict(t, retry, "Deal", "syncdesk_key"))
	require.Equal(t, 1, b.fake.Stats().Creates)
	require.Equal(t, 1, b.fake.CountByProperty("deals", "syncdesk_key", "r-1"))
}
