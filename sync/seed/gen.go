package seed

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/syncdesk/syncdesk/models"
)

// Column lists of the three tables Fill writes, in the order gen appends values.
var (
	recordCols = []string{"id", "local_type", "local_id", "payload", "content_hash", "created_at", "updated_at"}
	linkCols   = []string{"id", "local_type", "local_id", "external_service", "external_key", "external_id", "status",
		"attempts", "next_attempt_at", "lease_owner", "locked_until", "needs_lookup", "idempotency_key", "create_payload",
		"last_error", "last_http_code", "pushed_hash", "error_group", "created_at", "updated_at"}
	attemptCols = []string{"id", "link_id", "number", "operation", "idempotency_key", "http_code", "duration_ms",
		"outcome", "external_id", "error", "request_excerpt", "response_excerpt", "worker", "created_at"}
)

// Shape of the time line: links were created over the last month, attempts
// are those of the last two days (older ones are pruned in production).
const (
	linkSpan    = 30 * 24 * time.Hour
	attemptSpan = 48 * time.Hour
)

var workers = []string{"desk-1-4121-kQ2", "desk-2-3977-Zp8", "desk-3-4410-a7F"}

// batch is the rows of one round of INSERTs, one flat slice of values per table.
type batch struct {
	records, links, attempts    []any
	nRecords, nLinks, nAttempts int
}

// gen draws records, links and attempts in id order. Ids are given here,
// not by the database, so attempts can name their link without a round trip.
type gen struct {
	o               Options
	rng             *rand.Rand
	links, attempts int   // emitted so far; also the last link's and attempt's id
	recordID        int64 // the last record's id, also its local id
}

// more reports whether links remain to be drawn.
func (g *gen) more() bool { return g.links < g.o.Links }

// next returns the rows of at least want links (a record's links stay in
// one batch), or of those left at the end.
func (g *gen) next(want int) (*batch, error) {
	per := float64(g.o.Attempts) / float64(g.o.Links)
	b := &batch{records: make([]any, 0, want*len(recordCols)), links: make([]any, 0, (want+4)*len(linkCols)),
		attempts: make([]any, 0, int(float64(want+4)*per*1.1)*len(attemptCols))}
	for b.nLinks < want && g.links < g.o.Links {
		if err := g.record(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// record adds one record and its links to the services that take its type.
func (g *gen) record(b *batch) error {
	g.recordID++
	n := g.recordID
	typ, localID := typeOf(n), strconv.FormatInt(n, 10)
	body, hash, err := models.CanonicalPayload([]byte(payload(typ, n, g.rng)))
	if err != nil {
		return fmt.Errorf("record %d payload: %w", n, err)
	}
	created := g.createdAt(g.links)
	b.records = append(b.records, n, typ, localID, body, hash, created, created)
	b.nRecords++
	for _, svc := range servicesFor(typ, g.o.Services) {
		if g.links == g.o.Links {
			break
		}
		g.link(b, rec{typ: typ, localID: localID, body: body, hash: hash, created: created}, svc)
	}
	return nil
}

// createdAt spreads link creations evenly over linkSpan, oldest first.
func (g *gen) createdAt(i int) time.Time {
	span := linkSpan - time.Minute
	return g.o.Now.Add(-linkSpan + time.Duration(float64(span)*float64(i)/float64(g.o.Links)))
}

type rec struct {
	typ, localID, body, hash string
	created                  time.Time
}

// attemptCount draws how many attempts a link has, around the mean still to
// place, so the total comes out exact: the last link takes what is left.
func (g *gen) attemptCount(st models.Status) int {
	left, linksLeft := g.o.Attempts-g.attempts, g.o.Links-g.links+1
	if linksLeft <= 1 {
		return left
	}
	mean := float64(left) / float64(linksLeft)
	k := int(mean*(0.2+1.6*g.rng.Float64()) + 0.5)
	if st == models.StatusSuccess || st == models.StatusRetry || st == models.StatusFailed {
		k = max(k, 1)
	}
	return min(k, left)
}

// attemptTimes draws k sorted times between the link's creation (or the
// start of the attempt log) and now.
func (g *gen) attemptTimes(created time.Time, k int) []time.Time {
	start := later(created, g.o.Now.Add(-attemptSpan))
	span := g.o.Now.Sub(start) - time.Second
	out := make([]time.Time, k)
	for i := range out {
		out[i] = start.Add(time.Duration(g.rng.Int64N(int64(max(span, 1)))))
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
