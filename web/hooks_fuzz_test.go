package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// delivery is one webhook as a provider would send it: the scheme names
// the service it goes to (hookServices has one per scheme).
type delivery struct {
	scheme, id, typ string
	body            []byte
}

// fuzzSchemes are the services a fuzzed delivery can go to.
var fuzzSchemes = []string{"stripe", "standard", "github", "shopify", "hmac"}

// fuzzDelivery builds a delivery from fuzzed fields. The id and the type go
// where the scheme carries them (Stripe's in the body, the others' in
// headers, raw); the body always holds them too, with dataID as the
// subject's id and key. Strings are quoted as JSON but keep their bytes, so
// invalid UTF-8 reaches the body inside a valid document; junk follows it.
func fuzzDelivery(scheme uint8, id, typ, dataID, junk string) delivery {
	d := delivery{scheme: fuzzSchemes[int(scheme)%len(fuzzSchemes)], id: id, typ: typ}
	subject := fmt.Sprintf(`{"id":%s,"external_key":%s,"status":"succeeded"}`, jsonText(dataID), jsonText(dataID))
	if d.scheme == "stripe" {
		subject = `{"object":` + subject + `}`
	}
	d.body = []byte(fmt.Sprintf(`{"id":%s,"type":%s,"data":%s}%s`, jsonText(id), jsonText(typ), subject, junk))
	return d
}

// jsonText quotes s as a JSON string, escaping only what JSON requires and
// leaving every other byte as it is.
func jsonText(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// send posts a delivery to the handler itself, not through a socket: its
// headers arrive byte for byte, as a client library would not send some.
func (d delivery) send(h http.Handler, forged bool) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/hooks/"+d.scheme, strings.NewReader(string(d.body)))
	for k, v := range d.signedAt(hookNow, forged) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// fuzzHandler serves webhooks for every scheme on db, with a payment and a
// deal linked so that the effects find something to change.
func fuzzHandler(tb testing.TB, db *gorm.DB) http.Handler {
	rc, err := inbox.New(db, hookServices(), clock.NewFake(hookNow), slog.New(slog.DiscardHandler), redact.New(nil))
	require.NoError(tb, err)
	s, err := New(Deps{DB: db, Config: config.Default(), Clock: clock.NewFake(hookNow), Log: slog.New(slog.DiscardHandler), Inbox: rc})
	require.NoError(tb, err)
	for _, l := range []struct{ service, id, payload string }{
		{"stripe", "pay_1", `{"status":"pending"}`},
		{"standard", "deal_1", `{"title":"Order 1"}`},
	} {
		payload, hash, err := models.CanonicalPayload([]byte(l.payload))
		require.NoError(tb, err)
		require.NoError(tb, db.Create(&models.Record{LocalType: "order", LocalID: l.id, Payload: payload, ContentHash: hash,
			CreatedAt: hookNow, UpdatedAt: hookNow}).Error)
		require.NoError(tb, db.Create(&models.Link{LocalType: "order", LocalID: l.id, ExternalService: l.service, ExternalKey: l.id,
			ExternalID: l.id, Status: models.StatusSuccess, NextAttemptAt: hookNow, PushedHash: hash, CreatedAt: hookNow, UpdatedAt: hookNow}).Error)
	}
	return s.Handler()
}

// overlong is an id past Postgres's btree limit (about 2.7 KB per index
// entry) that compression cannot bring under it: hex of a hash chain.
func overlong(n int) string {
	var b strings.Builder
	sum := sha256.Sum256([]byte("overlong"))
	for b.Len() < n {
		b.WriteString(hex.EncodeToString(sum[:]))
		sum = sha256.Sum256(sum[:])
	}
	return b.String()[:n]
}

// addDeliverySeeds seeds the webhook fuzzers with the deliveries Postgres
// used to refuse (and SQLite took): a NUL or invalid UTF-8 in the event id,
// the type or the subject's id, junk after the body, overlong ids.
func addDeliverySeeds(f *testing.F) {
	long := overlong(3000)
	for _, s := range []struct {
		scheme              uint8
		id, typ, data, junk string
	}{
		{0, "evt_ok", "payment.succeeded", "pay_1", ""},
		{0, "evt_\x00nul", "payment.succeeded", "pay_1", ""},
		{0, "evt_nul_type", "payment.\x00succeeded", "pay_1", ""},
		{0, "evt_nul_data", "payment.succeeded", "pay_\x001", ""},
		{0, "evt_bad_utf8_\xff", "payment.\xfesucceeded", "pay_\xff", ""},
		{0, "evt_junk", "payment.succeeded", "pay_1", "\x00\xff junk"},
		{0, long, "payment.succeeded", "pay_1", ""},
		{0, "evt_long_type", long, "pay_1", ""},
		{0, "evt_long_data", "payment.refunded", long, ""},
		{1, "msg_ok", "contact.created", "contact_1", ""},
		{1, "msg_nul_\x00", "deal.updated", "deal_1", ""},
		{1, "msg_\xff", "deal.deleted", "deal_1", ""},
		{1, "msg_nul_contact", "contact.created", "contact_\x00", ""},
		{1, "msg_long_contact", "contact.created", long, ""},
		{1, long, "contact.created", "contact_2", ""},
		{2, "72d3162e-\x00", "push\x00", "", ""},
		{2, long, "push", "", ""},
		{3, "b54557e4-\xff", "orders/\xffcreate", "", "\x00"},
		{4, "gen-\x00", "x", "", ""},
		{4, "gen-junk", "x", "", "\x00\xff\xfe"},
		{4, long, long, long, ""},
	} {
		f.Add(s.scheme, s.id, s.typ, s.data, s.junk)
	}
}

// fuzzDeliveries posts fuzzed, correctly signed deliveries to the real
// handler on db. Whatever they hold: never a 5xx (a provider re-sends a 5xx
// for days, and these could never clear); a forged copy is a 401 and
// stores nothing; a 4xx stores nothing and says the same again; a 2xx
// stores the event once, and its re-send is a 2xx duplicate.
func fuzzDeliveries(f *testing.F, db *gorm.DB) {
	addDeliverySeeds(f)
	h := fuzzHandler(f, db)
	f.Fuzz(func(t *testing.T, scheme uint8, id, typ, dataID, junk string) {
		d := fuzzDelivery(scheme, id, typ, dataID, junk)
		before := countEvents(t, db)
		code, out := d.send(h, true)
		require.Equal(t, http.StatusUnauthorized, code, "a forged delivery: %s", out)
		require.Equal(t, before, countEvents(t, db), "a forged delivery stored an event")

		code, out = d.send(h, false)
		require.Less(t, code, 500, "a signed delivery must never get a 5xx: %s", out)
		if code >= 300 {
			require.Equal(t, before, countEvents(t, db), "answered %d but stored an event: %s", code, out)
			again, _ := d.send(h, false)
			require.Equal(t, code, again, "the re-send's answer")
			require.Equal(t, before, countEvents(t, db), "the re-send of a %d stored an event", code)
			return
		}
		var first inbox.Result
		require.NoError(t, json.Unmarshal([]byte(out), &first), out)
		stored := before + 1
		if first.Duplicate { // an earlier input had this id
			stored = before
		}
		require.Equal(t, stored, countEvents(t, db), "after a %d: %s", code, out)
		_, err := models.EventByID(db, d.scheme, first.EventID)
		require.NoError(t, err, "the event answered 2xx is stored under the id the answer names")

		code, out = d.send(h, false)
		require.Equal(t, http.StatusOK, code, "the re-send: %s", out)
		var again inbox.Result
		require.NoError(t, json.Unmarshal([]byte(out), &again), out)
		require.True(t, again.Duplicate, "the re-send is a duplicate: %s", out)
		require.Equal(t, first.EventID, again.EventID)
		require.Equal(t, stored, countEvents(t, db), "the re-send stored another event")
	})
}

func FuzzDeliveriesOnSQLite(f *testing.F) { fuzzDeliveries(f, dbtest.SQLite(f)) }

func FuzzDeliveriesOnPostgres(f *testing.F) { fuzzDeliveries(f, dbtest.Postgres(f)) }
