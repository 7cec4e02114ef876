package salesforce

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/fakes/faults"
)

func TestLostUpsertStillCommitsAndARetryUpdates(t *testing.T) {
	in := faults.New(faults.Options{Answer: FaultAnswer})
	b := setup(t, nil, in.Wrap)
	tok := b.token(t)
	const path = v60 + "/sobjects/Account/Key__c/lost-1"

	in.Script(faults.Lost)
	_, err := b.try(http.MethodPatch, path, tok, `{"Name":"Acme"}`, nil)
	require.Error(t, err, "the answer is lost")
	require.Equal(t, 1, b.fake.CountByField("Account", "Key__c", "lost-1"), "but the upsert committed")

	a := b.send(t, http.MethodPatch, path, tok, `{"Name":"Acme"}`)
	require.Equal(t, http.StatusOK, a.status, "the retry finds the record: %s", a.body)
	var res saveResult
	a.json(t, &res)
	require.False(t, *res.Created)
	require.Equal(t, b.fake.Records("Account")[0]["Id"], res.ID)
	require.Equal(t, 1, b.fake.Creates("Account"), "no second record")
	require.Equal(t, 1, in.Counts()[faults.Lost])
}

func TestFaultAnswersAreSalesforceErrors(t *testing.T) {
	in := faults.New(faults.Options{Answer: FaultAnswer})
	b := setup(t, nil, in.Wrap)
	tok := b.token(t)
	in.Script(faults.Error5xx, faults.TooMany)
	for _, want := range []struct {
		status int
		code   string
	}{{http.StatusServiceUnavailable, "SERVER_UNAVAILABLE"}, {http.StatusTooManyRequests, "REQUEST_LIMIT_EXCEEDED"}} {
		a := b.send(t, http.MethodPatch, v60+"/sobjects/Account/Key__c/f1", tok, `{}`)
		require.Equal(t, want.status, a.status)
		require.Equal(t, want.code, errorsOf(t, a)[0].ErrorCode)
	}
	require.Empty(t, b.fake.Records("Account"), "these faults commit nothing")
}

// TestUpsertsUnderFaultsMakeOneRecordEach sends 100 keys through 5xx, 429,
// hangs and lost answers, retrying each until it is answered: every key
// ends as exactly one record.
func TestUpsertsUnderFaultsMakeOneRecordEach(t *testing.T) {
	in := faults.New(faults.Options{Rate5xx: 0.08, Rate429: 0.04, RateHang: 0.03, RateLost: 0.1,
		HangFor: 2 * time.Second, Seed: 11, Answer: FaultAnswer})
	b := setup(t, nil, in.Wrap)
	client := &http.Client{Timeout: 300 * time.Millisecond}
	tok := tokenDespiteFaults(t, b, client)

	const keys, workers = 100, 10
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := range work {
				upsertUntilAnswered(t, b, client, tok, fmt.Sprintf("fk-%d", k))
			}
		})
	}
	for k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()

	for k := range keys {
		require.Equal(t, 1, b.fake.CountByField("Account", "Key__c", fmt.Sprintf("fk-%d", k)), "key fk-%d", k)
	}
	require.Equal(t, keys, b.fake.Creates("Account"))
	counts := in.Counts()
	require.Positive(t, counts[faults.Lost], "some answers were lost: %v", counts)
	require.Positive(t, counts[faults.Hang]+counts[faults.Error5xx]+counts[faults.TooMany], "and other faults met: %v", counts)
}

// tokenDespiteFaults asks for a token until one is granted.
func tokenDespiteFaults(t *testing.T, b bundle, client *http.Client) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {clientSecret}}
	for range 50 {
		res, err := client.PostForm(b.srv.URL+"/services/oauth2/token", form)
		if err != nil {
			continue
		}
		if res.StatusCode != http.StatusOK {
			res.Body.Close()
			continue
		}
		var tok tokenAnswer
		readJSON(t, res, &tok)
		return tok.AccessToken
	}
	t.Fatal("no token after 50 tries")
	return ""
}

// upsertUntilAnswered retries one upsert until it gets a 2xx.
func upsertUntilAnswered(t *testing.T, b bundle, client *http.Client, tok, key string) {
	for range 50 {
		a, err := b.try(http.MethodPatch, v60+"/sobjects/Account/Key__c/"+key, tok, `{"Name":"`+key+`"}`, client)
		if err == nil && (a.status == http.StatusCreated || a.status == http.StatusOK) {
			return
		}
		if err == nil && a.status != http.StatusServiceUnavailable && a.status != http.StatusTooManyRequests {
			t.Errorf("key %s: unexpected %d %s", key, a.status, a.body)
			return
		}
	}
	t.Errorf("key %s: no answer after 50 tries", key)
}
