package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/inbox"
)

// BenchmarkWebhookBatches is BenchmarkWebhookDeliveries with HubSpot's
// deliveries: each a JSON list of batchSize property changes, signed with
// HubSpot's v3 signature, to a service configured from the hubspot preset.
// Half the deliveries are re-sends of an earlier batch, as HubSpot re-sends
// a whole request that got no 2xx in time (attemptNumber one higher, the
// events the same). It reports events/s, to set beside
// BenchmarkWebhookDeliveries' (one event a delivery), and deliveries/s.
func BenchmarkWebhookBatches(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, open func(testing.TB) *gorm.DB) {
		load := newBatchLoad(b.N)
		db := open(b)
		load.seed(b, db)
		cfg := loadConfig(b, hubspotBenchConfig)
		base, rc := benchServer(b, db, cfg.Services)
		url, client := base+"/hooks/"+hubspotBenchService, benchClient(b)
		send := func(bodies []string) func(i int) (int, error) {
			return func(i int) (int, error) { return deliverBatch(client, url, bodies[i]) }
		}
		dups := deliverAll(b, len(load.warmBodies), send(load.warmBodies))
		b.ResetTimer()
		dups += deliverAll(b, len(load.timedBodies), send(load.timedBodies))
		b.StopTimer()

		if err := rc.Flush(context.Background()); err != nil {
			b.Fatalf("flush the counts: %v", err)
		}
		load.check(b, db)
		if want := load.duplicates() * batchSize; dups != want {
			b.Fatalf("%d events were answered as duplicates; want %d", dups, want)
		}
		secs := b.Elapsed().Seconds()
		b.ReportMetric(float64(b.N*batchSize)/secs, "events/s")
		b.ReportMetric(float64(b.N)/secs, "deliveries/s")
	})
}

// batchSize is the events of one delivery. HubSpot sends up to 100; 20 is
// a busy portal's usual batch.
const batchSize = 20

const (
	hubspotBenchService = "hubspot"
	hubspotBenchSecret  = "hubspot-app-client-secret-bench"
)

// hubspotBenchConfig is the hubspot preset with its webhook settings on.
const hubspotBenchConfig = `
services:
  hubspot:
    preset: hubspot
    headers: {Authorization: "Bearer pat-bench"}
    webhook: {secrets: [` + hubspotBenchSecret + `]}
    objects:
      contact: {}
      company: {}
      deal: {}
`

// batchSlot is one object a batch changes, and the HubSpot properties it
// changes: one event each, all at the same moment, as HubSpot sends one
// event per property of one edit.
type batchSlot struct {
	typ   string // contact, company or deal
	props []string
}

// batchSlots is what every batch changes: batchSize events about twelve
// objects of the three types, one to three properties each.
var batchSlots = []batchSlot{
	{"contact", []string{"firstname", "lastname", "email"}},
	{"contact", []string{"email"}},
	{"contact", []string{"firstname", "lastname"}},
	{"contact", []string{"lastname"}},
	{"contact", []string{"firstname", "email"}},
	{"contact", []string{"firstname"}},
	{"contact", []string{"email", "lastname"}},
	{"company", []string{"name", "domain"}},
	{"company", []string{"domain"}},
	{"deal", []string{"dealname", "amount", "dealstage"}},
	{"deal", []string{"dealstage"}},
	{"deal", []string{"amount"}},
}

// hubspotField is the record's field each HubSpot property sets (the
// preset's update_fields), and its subscription: HubSpot subscribes an app
// to each property's changes apart, so the subscription tells them apart.
var hubspotField = map[string]struct {
	field        string
	subscription int
}{
	"contact.firstname": {"first_name", 1810001}, "contact.lastname": {"last_name", 1810002}, "contact.email": {"email", 1810003},
	"company.name": {"name", 1820001}, "company.domain": {"domain", 1820002},
	"deal.dealname": {"name", 1830001}, "deal.amount": {"amount", 1830002}, "deal.dealstage": {"stage", 1830003},
}

// batchLoad is the bodies of one run's deliveries: an untimed warm-up, then
// the timed ones, numbered as benchLoad numbers events.
type batchLoad struct {
	benchLoad
	warmBodies, timedBodies []string
	occurred                time.Time // every change's time, after the seeded records'
}

func newBatchLoad(n int) batchLoad {
	l := batchLoad{benchLoad: newBenchLoad(n), occurred: time.Now().UTC().Truncate(time.Millisecond)}
	sent := map[int]int{}
	bodies := func(order []int) []string {
		out := make([]string, len(order))
		for i, batch := range order {
			out[i] = l.body(batch, sent[batch])
			sent[batch]++
		}
		return out
	}
	l.warmBodies, l.timedBodies = bodies(l.warm), bodies(l.timed)
	return l
}

// batchObject is the HubSpot id (and our local id) of a batch's slot.
func batchObject(batch, slot int) string {
	return strconv.Itoa(70000000 + batch*len(batchSlots) + slot)
}

// batchValue is what a batch sets a property to: not what the record held.
func batchValue(batch int, prop string) string {
	switch prop {
	case "amount":
		return strconv.Itoa(2000 + batch)
	case "dealstage":
		return []string{"qualifiedtobuy", "contractsent", "closedwon"}[batch%3]
	case "email":
		return fmt.Sprintf("buyer%d@example.com", batch)
	case "domain":
		return fmt.Sprintf("shop%d.example", batch)
	}
	return fmt.Sprintf("%s %d", prop, batch)
}

// body is batch's delivery on its attempt'th re-send: a JSON list of events
// shaped as HubSpot documents them
// (https://developers.hubspot.com/docs/api/webhooks#webhook-payloads),
// shuffled as HubSpot does not sort them.
func (l batchLoad) body(batch, attempt int) string {
	var events []string
	for slot, s := range batchSlots {
		for _, prop := range s.props {
			p := hubspotField[s.typ+"."+prop]
			events = append(events, fmt.Sprintf(`{"eventId":%d,"subscriptionId":%d,"portalId":62515,"appId":1160452,`+
				`"occurredAt":%d,"subscriptionType":"%s.propertyChange","attemptNumber":%d,"objectId":%s,`+
				`"propertyName":%q,"propertyValue":%q,"changeSource":"CRM_UI","sourceId":"userId:8122311"}`,
				3000000000+batch*batchSize+len(events), p.subscription, l.occurred.UnixMilli(), s.typ, attempt,
				batchObject(batch, slot), prop, batchValue(batch, prop)))
		}
	}
	rng := rand.New(rand.NewPCG(uint64(batch), 7))
	rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	return "[" + strings.Join(events, ",") + "]"
}

// batchBefore is what each record holds before its batch.
var batchBefore = map[string]string{
	"contact": `{"email":"old@example.com","first_name":"Old","last_name":"Name"}`,
	"company": `{"domain":"old.example","name":"Old Co"}`,
	"deal":    `{"amount":1000,"name":"Old deal","stage":"appointmentscheduled"}`,
}

// seed stores the objects of every batch as records linked to HubSpot, last
// changed a minute before the events.
func (l batchLoad) seed(b *testing.B, db *gorm.DB) {
	b.Helper()
	at := l.occurred.Add(-time.Minute)
	var recs []models.Record
	var links []models.Link
	for batch := range l.events() {
		for slot, s := range batchSlots {
			id := batchObject(batch, slot)
			payload, hash, err := models.CanonicalPayload([]byte(batchBefore[s.typ]))
			if err != nil {
				b.Fatal(err)
			}
			recs = append(recs, models.Record{LocalType: s.typ, LocalID: id, Payload: payload, ContentHash: hash, CreatedAt: at, UpdatedAt: at})
			links = append(links, models.Link{LocalType: s.typ, LocalID: id, ExternalService: hubspotBenchService, ExternalKey: s.typ + "_" + id,
				ExternalID: id, Status: models.StatusSuccess, NextAttemptAt: at, PushedHash: hash, CreatedAt: at, UpdatedAt: at})
		}
	}
	if err := db.CreateInBatches(recs, 500).Error; err != nil {
		b.Fatalf("seed records: %v", err)
	}
	if err := db.CreateInBatches(links, 500).Error; err != nil {
		b.Fatalf("seed links: %v", err)
	}
}

// check proves the work was done: one processed row per distinct event,
// each applied, every re-sent one counted; every record holds its batch's
// values, and its HubSpot link holds the record (nothing to push back).
func (l batchLoad) check(b *testing.B, db *gorm.DB) {
	b.Helper()
	var got struct{ Rows, Applied, Dups int64 }
	err := db.Model(&models.ProcessedEvent{}).Where("provider = ?", hubspotBenchService).
		Select("COUNT(*) AS rows, SUM(CASE WHEN outcome = ? THEN 1 ELSE 0 END) AS applied, COALESCE(SUM(duplicates), 0) AS dups", models.EventApplied).
		Scan(&got).Error
	if err != nil {
		b.Fatalf("count processed events: %v", err)
	}
	want := int64(l.events() * batchSize)
	if got.Rows != want || got.Applied != want || got.Dups != int64(l.duplicates()*batchSize) {
		b.Fatalf("after %d deliveries of %d events: %d processed rows, %d applied, %d duplicates counted; want %d, %d, %d",
			l.deliveries(), batchSize, got.Rows, got.Applied, got.Dups, want, want, l.duplicates()*batchSize)
	}
	var rows []struct {
		LocalType, LocalID, Payload, ContentHash, PushedHash string
	}
	err = db.Table("records").Select("records.local_type, records.local_id, records.payload, records.content_hash, external_map.pushed_hash").
		Joins("JOIN external_map ON external_map.local_type = records.local_type AND external_map.local_id = records.local_id").
		Scan(&rows).Error
	if err != nil {
		b.Fatalf("read records: %v", err)
	}
	held := map[string]string{}
	for _, r := range rows {
		if r.PushedHash != r.ContentHash {
			b.Fatalf("%s/%s: its HubSpot link holds %s, the record is %s: HubSpot's own change would be pushed back", r.LocalType, r.LocalID, r.PushedHash, r.ContentHash)
		}
		held[r.LocalType+"/"+r.LocalID] = r.Payload
	}
	for batch := range l.events() {
		for slot, s := range batchSlots {
			var fields map[string]any
			if err := json.Unmarshal([]byte(batchBefore[s.typ]), &fields); err != nil {
				b.Fatal(err)
			}
			for _, prop := range s.props {
				v := any(batchValue(batch, prop))
				if prop == "amount" {
					v = float64(2000 + batch) // the field keeps its type: a number
				}
				fields[hubspotField[s.typ+"."+prop].field] = v
			}
			key := s.typ + "/" + batchObject(batch, slot)
			var gotFields map[string]any
			if err := json.Unmarshal([]byte(held[key]), &gotFields); err != nil {
				b.Fatalf("%s: %v", key, err)
			}
			if fmt.Sprint(gotFields) != fmt.Sprint(fields) {
				b.Fatalf("%s holds %v; want %v", key, gotFields, fields)
			}
		}
	}
}

// deliverBatch posts one delivery signed freshly with HubSpot's v3
// signature (base64 HMAC-SHA256 of method, URL, body and the timestamp in
// milliseconds), and returns how many of its events syncdesk answered as
// duplicates.
func deliverBatch(client *http.Client, url, body string) (int, error) {
	ms := strconv.FormatInt(time.Now().UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(hubspotBenchSecret))
	mac.Write([]byte(http.MethodPost + url + body + ms))
	var ans struct{ Events []inbox.Result }
	err := postBench(client, url, body, http.Header{"X-Hubspot-Signature-V3": {base64.StdEncoding.EncodeToString(mac.Sum(nil))},
		"X-Hubspot-Request-Timestamp": {ms}}, &ans)
	if err == nil && len(ans.Events) != batchSize {
		return 0, fmt.Errorf("%d results for %d events", len(ans.Events), batchSize)
	}
	dups := 0
	for _, r := range ans.Events {
		if r.Duplicate {
			dups++
		}
	}
	return dups, err
}
