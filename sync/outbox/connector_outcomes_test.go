package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// These tests run the engine against providers whose answers the HTTP
// connector once misread, and count the remote objects: one link, one object.

// scriptedCRM keeps every object POSTed to it and lets a test shape its
// answers to creates and to lookups by ?external_key=.
type scriptedCRM struct {
	mu      sync.Mutex
	objs    []map[string]any
	created func(w http.ResponseWriter, obj map[string]any)
	found   func(w http.ResponseWriter, objs []map[string]any)
}

func (f *scriptedCRM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		var obj map[string]any
		_ = json.NewDecoder(r.Body).Decode(&obj)
		f.mu.Lock()
		obj["id"] = fmt.Sprintf("deal_%d", len(f.objs)+1)
		f.objs = append(f.objs, obj)
		f.mu.Unlock()
		f.created(w, obj)
	case http.MethodGet:
		key := r.URL.Query().Get("external_key")
		var found []map[string]any
		f.mu.Lock()
		for _, o := range f.objs {
			if o["external_key"] == key {
				found = append(found, o)
			}
		}
		f.mu.Unlock()
		f.found(w, found)
	}
}

func (f *scriptedCRM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.objs)
}

// engineOn points the crm service of e at f and returns an engine for it.
func (e *env) engineOn(f *scriptedCRM) *Engine {
	srv := httptest.NewServer(f)
	e.t.Cleanup(srv.Close)
	cfg := crmConfig(srv.URL)
	e.svcs = []Service{{Name: "crm", Config: cfg, Conn: connector.NewHTTP("crm", cfg, e.redactr, nil)}}
	return e.engine(e.db, Options{Concurrency: 2})
}

func TestACreateAnswered202WithoutAnIDIsLookedUpNotCreatedAgain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		f := &scriptedCRM{
			created: func(w http.ResponseWriter, _ map[string]any) { w.WriteHeader(http.StatusAccepted) },
			found:   func(w http.ResponseWriter, objs []map[string]any) { _ = json.NewEncoder(w).Encode(objs) },
		}
		eng := e.engineOn(f)
		e.upsert(order(1))
		e.settle(eng)

		typ, id, _ := order(1)
		l := e.link(typ, id, "crm")
		require.Equal(t, 1, f.count(), "the 202 made the object: one link, one object")
		require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		require.Equal(t, "deal_1", l.ExternalID, "the object the 202 made is adopted")
		as := e.attempts(l.ID)
		require.Len(t, as, 2)
		require.Equal(t, models.OutcomeAmbiguous, as[0].Outcome)
		require.Contains(t, as[0].Error, "without the new object's id")
		require.Equal(t, "deal.lookup", as[1].Operation)
	})
}

// A create whose answer is lost is looked up before it is tried again; a
// lookup answer in a shape the connector does not read (HubSpot's
// {"total","results"}) once counted as "none found" and let the retry
// create a second object. Now the lookup fails until max attempts, and the
// link fails with a reason, still marked for a lookup.
func TestALookupAnswerOfAnUnknownShapeDoesNotLetASecondCreateThrough(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		var answered atomic.Bool
		f := &scriptedCRM{
			created: func(w http.ResponseWriter, obj map[string]any) {
				if !answered.Swap(true) {
					time.Sleep(700 * time.Millisecond) // past the 500 ms timeout: made, its answer lost
					return
				}
				w.WriteHeader(http.StatusCreated)
				_ = json.NewEncoder(w).Encode(obj)
			},
			found: func(w http.ResponseWriter, objs []map[string]any) {
				_ = json.NewEncoder(w).Encode(map[string]any{"total": len(objs), "results": objs})
			},
		}
		eng := e.engineOn(f)
		e.upsert(order(1))
		e.settle(eng)

		typ, id, _ := order(1)
		l := e.link(typ, id, "crm")
		require.Equal(t, 1, f.count(), "one remote object for one link")
		require.Equal(t, models.StatusFailed, l.Status)
		require.True(t, l.NeedsLookup, "a Retry must still look up before creating")
		require.Contains(t, l.LastError, "the lookup's answer was not understood")
		as := e.attempts(l.ID)
		require.Len(t, as, 6)
		require.Equal(t, models.OutcomeAmbiguous, as[0].Outcome)
		for _, a := range as[1:] {
			require.Equal(t, "deal.lookup", a.Operation)
			require.Equal(t, models.OutcomeTemporary, a.Outcome)
		}
	})
}

// slowPayments honours Idempotency-Key the way Stripe does: while the first
// request with a key is still running, another with it gets 409; once it has
// finished, another gets its answer again. The first create of each key
// runs until the test closes release, whether its client waits or not.
type slowPayments struct {
	release   chan struct{}
	released  sync.Once
	committed chan struct{}
	mu        sync.Mutex
	answers   map[string][]byte // nil while the first request runs
	creates   int
}

func (p *slowPayments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	p.mu.Lock()
	answer, seen := p.answers[key]
	if !seen {
		p.answers[key] = nil
	}
	p.mu.Unlock()
	switch {
	case seen && answer == nil:
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error":{"type":"idempotency_error","message":"a request with this idempotency key is in progress"}}`))
		return
	case seen:
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(answer)
		return
	}
	<-p.release
	p.mu.Lock()
	p.creates++
	answer = fmt.Appendf(nil, `{"id":"pay_%d"}`, p.creates)
	p.answers[key] = answer
	p.mu.Unlock()
	close(p.committed)
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(answer)
}

// finish lets the first create of each key go on, once.
func (p *slowPayments) finish() { p.released.Do(func() { close(p.release) }) }

func TestA409WhileTheFirstCreateStillRunsIsRetriedNotFailed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		p := &slowPayments{release: make(chan struct{}), committed: make(chan struct{}), answers: map[string][]byte{}}
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		t.Cleanup(p.finish) // before the server closes, which waits for its handlers
		cfg := payConfig(srv.URL)
		e.svcs = []Service{{Name: "payments", Config: cfg, Conn: connector.NewHTTP("payments", cfg, e.redactr, nil)}}
		eng := e.engine(db, Options{Concurrency: 2})
		typ, id, payload := payment(1)
		_, err := eng.Upsert(context.Background(), typ, id, []byte(payload))
		require.NoError(t, err)

		require.NoError(t, eng.Drain(context.Background())) // no answer within 500 ms; the provider works on
		e.clock.Advance(16 * time.Minute)
		require.NoError(t, eng.Drain(context.Background())) // 409: the key is still held
		l := e.link(typ, id, "payments")
		require.Equal(t, models.StatusRetry, l.Status, "a 409 'in progress' is not a reason to give up: %s", l.LastError)
		require.Equal(t, http.StatusConflict, l.LastHTTPCode)

		p.finish()
		<-p.committed
		e.settle(eng)
		l = e.link(typ, id, "payments")
		require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		require.Equal(t, "pay_1", l.ExternalID, "the re-send with the key got the first create's answer")
		require.Equal(t, 1, p.creates)
		var outcomes []models.Outcome
		for _, a := range e.attempts(l.ID) {
			outcomes = append(outcomes, a.Outcome)
		}
		require.Equal(t, []models.Outcome{models.OutcomeAmbiguous, models.OutcomeAmbiguous, models.OutcomeOK}, outcomes)
	})
}
