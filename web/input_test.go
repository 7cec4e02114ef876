package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// What no text column can store — a NUL byte, invalid UTF-8 — gets a 400
// that says so, on every database (Postgres refuses it mid-query), and
// writes nothing.
func TestTextThatIsNotTextIsRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		anon := b.client()
		r := anon.post("/login", "/login", url.Values{"email": {"a\x00@example.com"}, "password": {"x"}})
		require.Equal(t, http.StatusBadRequest, r.status, r.body)
		require.Contains(t, r.body, "not text")

		c := b.signedIn("ana@example.com", models.RoleAdmin)
		for _, path := range []string{"/links?q=%00", "/audit?actor=%00", "/audit?target=%FF", "/failed/group?g=%00", "/links/1%00"} {
			r := c.get(path)
			require.Equal(t, http.StatusBadRequest, r.status, path)
			require.Contains(t, r.body, "not text", path)
		}
		r = c.post("/users", "/users", url.Values{"email": {"bo\xff@example.com"}, "role": {"viewer"}})
		require.Equal(t, http.StatusBadRequest, r.status, r.body)

		a := b.api()
		for _, path := range []string{"/api/v1/records/order/a%00b", "/api/v1/records/order/a%FFb"} {
			code, out := a.do("PUT", path, `{"title":"x"}`)
			require.Equal(t, http.StatusBadRequest, code, path)
			require.Contains(t, out["error"], "not text", path)
		}
		var records, users int64
		require.NoError(t, db.Model(&models.Record{}).Count(&records).Error)
		require.NoError(t, db.Model(&models.User{}).Count(&users).Error)
		require.Zero(t, records)
		require.EqualValues(t, 1, users, "only ana")
	})
}

// A client that escapes characters a path may carry as they are ("A%3A1"
// for "A:1") names the same record: one record, one link, one remote object.
func TestAnEscapedRecordIDIsTheSameRecord(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		code, out := a.do("PUT", "/api/v1/records/order/A:1", `{"title":"one"}`)
		require.Equal(t, http.StatusOK, code, out)
		code, out = a.do("PUT", "/api/v1/records/order/A%3A1", `{"title":"one"}`)
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, false, out["changed"], "the same record with the same payload")
		require.Equal(t, "A:1", out["local_id"])

		// An id with characters a URL reserves still has a working page.
		code, out = a.do("PUT", "/api/v1/records/order/"+url.PathEscape("B#2?3%4;5"), `{"title":"two"}`)
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, "B#2?3%4;5", out["local_id"])
		var records int64
		require.NoError(t, db.Model(&models.Record{}).Count(&records).Error)
		require.EqualValues(t, 2, records)

		c := b.signedIn("ana@example.com", models.RoleViewer)
		r := c.get("/records/order/" + url.PathEscape("B#2?3%4;5"))
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, r.body, "B#2?3%4;5")
		require.Contains(t, c.get("/links/2").body, `href="/records/order/B%232%3F3%254%3B5"`, "the link's page links to the record's")
	})
}

// A page form's body is bounded before anything reads it, signed in or not.
func TestAFormTooLargeIsRefusedUnread(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	anon := b.client()
	big := url.Values{"email": {"a@example.com"}, "password": {strings.Repeat("x", maxFormBody)}}
	r := anon.post("/login", "/login", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status, r.body)
	require.Contains(t, r.body, "The form is too large")
}

// A record id or type holding U+202E (or another bidi control) could be
// shown reading as another id: the API refuses it with a 400 that names the
// field and the character, writes nothing, and the record page refuses it
// the same way. A links search for one just finds nothing.
func TestBidiControlsInRecordKeysAreRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		rlo := url.PathEscape("\u202e")
		for _, tc := range []struct{ method, path, words string }{
			{"PUT", "/api/v1/records/order/12" + rlo + "34", "the id holds U+202E"},
			{"PUT", "/api/v1/records/ord" + rlo + "er/1234", "the type holds U+202E"},
			{"PUT", "/api/v1/records/order/" + url.PathEscape("12\u206634"), "the id holds U+2066"},
			{"PUT", "/api/v1/records/order/" + url.PathEscape("12\u061c34"), "the id holds U+061C"},
			{"GET", "/api/v1/records/order/12" + rlo + "34", "the id holds U+202E"},
		} {
			code, out := a.do(tc.method, tc.path, `{"title":"x"}`)
			require.Equal(t, http.StatusBadRequest, code, "%s %s: %v", tc.method, tc.path, out)
			require.Contains(t, out["error"], tc.words, "%s %s", tc.method, tc.path)
		}
		var records, links int64
		require.NoError(t, db.Model(&models.Record{}).Count(&records).Error)
		require.NoError(t, db.Model(&models.Link{}).Count(&links).Error)
		require.Zero(t, records+links, "a refused id writes nothing")

		c := b.signedIn("ana@example.com", models.RoleViewer)
		r := c.get("/records/order/12" + rlo + "34")
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, "the id holds U+202E")
		r = c.get("/links?q=12" + rlo + "34")
		require.Equal(t, http.StatusOK, r.status, "a search for a bidi control is a search that finds nothing")
	})
}
