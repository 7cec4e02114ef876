package salesforce

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Query runs SOQL and answers {"totalSize", "done", "nextRecordsUrl",
// "records"}; each record carries attributes (type, url) and the selected
// fields. When more records match than a batch holds, the answer carries
// the first batch, done false and nextRecordsUrl, a query locator to GET for
// the next batch, until done is true and nextRecordsUrl is absent. The
// batch is at most 2000 records; a Sforce-Query-Options: batchSize=N header
// asks for fewer (200 to 2000), and Salesforce may send fewer still.
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_query.htm
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/headers_queryoptions.htm
// A locator and its results stay available for two days; an unknown or
// expired one is INVALID_QUERY_LOCATOR.
// https://developer.salesforce.com/docs/platform/salesforce-app-limits-cheatsheet/guide/salesforce-app-limits-platform-apicursors.html

// cursorLife is how long a query's results can be paged through.
const cursorLife = 48 * time.Hour

// cursor is a query's result set, fixed when the query ran so that paging
// neither skips nor repeats a record while others change.
type cursor struct {
	id      string // the locator, once a second page is needed
	rows    []map[string]any
	expires time.Time
}

// queryResult is one page of a query's answer.
type queryResult struct {
	TotalSize      int              `json:"totalSize"`
	Done           bool             `json:"done"`
	NextRecordsURL string           `json:"nextRecordsUrl,omitempty"`
	Records        []map[string]any `json:"records"`
}

func (s *Server) serveQuery(r *http.Request, c call) (int, any) {
	q, err := parseSOQL(r.URL.Query().Get("q"))
	if err != nil {
		return fail(http.StatusBadRequest, "MALFORMED_QUERY", err.Error()).reply()
	}
	t, ok := s.objects[strings.ToLower(q.object)]
	if !ok {
		return fail(http.StatusBadRequest, "INVALID_TYPE", "sObject type '"+q.object+"' is not supported.").reply()
	}
	if f := t.resolve(&q); f != nil {
		return f.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := &cursor{rows: t.run(q, c.base()), expires: s.now().Add(cursorLife)}
	return http.StatusOK, s.page(cur, 0, s.batch(r), c)
}

func (s *Server) serveQueryMore(r *http.Request, c call) (int, any) {
	id, off, ok := strings.Cut(c.segs[1], "-")
	offset, err := strconv.Atoi(off)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, known := s.cursors[id]
	if !ok || err != nil || !known || !s.now().Before(cur.expires) || offset < 0 || offset >= len(cur.rows) {
		return fail(http.StatusBadRequest, "INVALID_QUERY_LOCATOR", "invalid query locator").reply()
	}
	return http.StatusOK, s.page(cur, offset, s.batch(r), c)
}

// page is the batch of cur from offset; it keeps cur for the next page
// when there is one. The caller holds s.mu.
func (s *Server) page(cur *cursor, offset, batch int, c call) queryResult {
	end := min(offset+batch, len(cur.rows))
	res := queryResult{TotalSize: len(cur.rows), Done: end == len(cur.rows), Records: cur.rows[offset:end]}
	if !res.Done {
		if cur.id == "" {
			s.forgetExpiredCursors()
			cur.id = randomID("01g")
			s.cursors[cur.id] = cur
		}
		res.NextRecordsURL = c.base() + "/query/" + cur.id + "-" + strconv.Itoa(end)
	}
	return res
}

// forgetExpiredCursors drops the cursors past their life. The caller
// holds s.mu.
func (s *Server) forgetExpiredCursors() {
	now := s.now()
	for id, c := range s.cursors {
		if !now.Before(c.expires) {
			delete(s.cursors, id)
		}
	}
}

// batch is the page size: the fake's BatchSize, or fewer when the request
// asks for a batchSize within Salesforce's 200 to 2000.
func (s *Server) batch(r *http.Request) int {
	for _, opt := range strings.Split(r.Header.Get("Sforce-Query-Options"), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(opt), "=")
		if n, err := strconv.Atoi(v); strings.EqualFold(k, "batchSize") && err == nil {
			return min(s.opts.BatchSize, max(200, min(n, 2000)))
		}
	}
	return s.opts.BatchSize
}

// resolve puts q's field names in their canonical spelling, or says which
// one the object lacks.
func (t *table) resolve(q *soql) *failure {
	canon := func(f *string) *failure {
		c, ok := t.field(*f)
		if !ok {
			return fail(http.StatusBadRequest, "INVALID_FIELD", "No such column '"+*f+"' on entity '"+t.name+
				"'. If you are attempting to use a custom field, be sure to append the '__c' after the custom field name.")
		}
		*f = c
		return nil
	}
	for i := range q.fields {
		if f := canon(&q.fields[i]); f != nil {
			return f
		}
	}
	for i := range q.where {
		if f := canon(&q.where[i].field); f != nil {
			return f
		}
	}
	if q.orderBy != "" {
		return canon(&q.orderBy)
	}
	return nil
}

// run selects, orders and limits the records q asks for, rendered. The
// caller holds s.mu.
func (t *table) run(q soql, base string) []map[string]any {
	var recs []Record
	for _, r := range t.records {
		if t.satisfies(r, q.where) {
			recs = append(recs, r)
		}
	}
	if q.orderBy != "" {
		slices.SortStableFunc(recs, func(a, b Record) int {
			c := compareValues(a[q.orderBy], b[q.orderBy], q.orderBy)
			if q.desc {
				return -c
			}
			return c
		})
	}
	if q.limit >= 0 && len(recs) > q.limit {
		recs = recs[:q.limit]
	}
	rows := make([]map[string]any, len(recs))
	for i, r := range recs {
		row := map[string]any{"attributes": map[string]string{"type": t.name, "url": t.url(base, r)}}
		for _, f := range q.fields {
			row[f] = r[f]
		}
		rows[i] = row
	}
	return rows
}

// satisfies reports whether r meets every condition. String comparison
// ignores case but on unique case-sensitive fields; != keeps nulls.
func (t *table) satisfies(r Record, where []condition) bool {
	for _, c := range where {
		var eq bool
		if c.value == nil {
			eq = r[c.field] == nil
		} else {
			eq = same(r[c.field], *c.value, !t.cased[c.field])
		}
		if eq == c.not {
			return false
		}
	}
	return true
}

// compareValues orders two field values: nulls first, numbers by value,
// ids and dates as written, other text ignoring case.
func compareValues(a, b any, field string) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	an, aNum := a.(json.Number)
	bn, bNum := b.(json.Number)
	if aNum && bNum {
		af, _ := an.Float64()
		bf, _ := bn.Float64()
		return cmpFloat(af, bf)
	}
	as, bs := toString(a), toString(b)
	if !isSystem(field) {
		as, bs = strings.ToLower(as), strings.ToLower(bs)
	}
	return strings.Compare(as, bs)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
