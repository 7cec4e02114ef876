package salesforce

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// query runs SOQL through the API.
func (b bundle) query(t *testing.T, tok, soql string) answer {
	t.Helper()
	return b.send(t, http.MethodGet, v60+"/query?q="+url.QueryEscape(soql), tok, "")
}

// upsertAccounts makes accounts k{from}…k{to-1} through the API.
func (b bundle) upsertAccounts(t *testing.T, tok string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		a := b.send(t, http.MethodPatch, fmt.Sprintf("%s/sobjects/Account/Key__c/k%d", v60, i), tok, fmt.Sprintf(`{"Name":"Account %d"}`, i))
		require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	}
}

func TestQueryPagesThroughNextRecordsURLWithoutGapsOrRepeats(t *testing.T) {
	b := setup(t, func(o *Options) { o.BatchSize = 3 }, nil)
	tok := b.token(t)
	b.upsertAccounts(t, tok, 0, 10)
	var want []string
	for _, r := range b.fake.Records("Account") {
		want = append(want, r["Id"].(string))
	}

	a := b.query(t, tok, "SELECT Id, Name, Key__c FROM Account ORDER BY Id")
	var got []string
	pages := 0
	for {
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		var page queryResult
		a.json(t, &page)
		pages++
		require.Equal(t, 10, page.TotalSize, "totalSize is the whole result on every page")
		for _, r := range page.Records {
			got = append(got, r["Id"].(string))
		}
		if page.Done {
			require.Empty(t, page.NextRecordsURL, "the last page has no nextRecordsUrl")
			break
		}
		require.Len(t, page.Records, 3)
		require.True(t, strings.HasPrefix(page.NextRecordsURL, v60+"/query/01g"), page.NextRecordsURL)
		if pages == 1 {
			b.upsertAccounts(t, tok, 10, 12) // the open query does not see them
		}
		a = b.send(t, http.MethodGet, page.NextRecordsURL, tok, "")
	}
	require.Equal(t, want, got, "every record once, in order")
	require.Equal(t, 4, pages)
	require.Equal(t, map[Endpoint]int{EndpointToken: 1, EndpointUpsert: 12, EndpointQuery: 1, EndpointQueryMore: 3}, b.fake.Requests())
}

func TestQueryRecordsAndFilters(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	b.upsertAccounts(t, tok, 0, 3)
	_, err := b.fake.Insert("Account", map[string]any{"Name": "No key"})
	require.NoError(t, err)
	id := b.fake.Records("Account")[1]["Id"].(string)

	var page queryResult
	b.query(t, tok, "select id, name, KEY__C from account where key__c = 'k1'").json(t, &page)
	require.Equal(t, queryResult{TotalSize: 1, Done: true, Records: []map[string]any{{
		"attributes": map[string]any{"type": "Account", "url": v60 + "/sobjects/Account/" + id},
		"Id":         id, "Name": "Account 1", "Key__c": "k1",
	}}}, page, "names are case-insensitive; answers use the canonical spelling")

	for _, tc := range []struct {
		where string
		names []string
	}{
		{"Key__c = 'K1'", []string{"Account 1"}}, // SOQL's = ignores case on a field that is not unique case-sensitive
		{"Key__c != 'k1'", []string{"Account 0", "Account 2", "No key"}},
		{"Key__c = null", []string{"No key"}},
		{"Key__c != null AND Name != 'Account 0'", []string{"Account 1", "Account 2"}},
		{`Name = 'Account\'s'`, nil},
	} {
		var page queryResult
		b.query(t, tok, "SELECT Name FROM Account WHERE "+tc.where+" ORDER BY Name").json(t, &page)
		var names []string
		for _, r := range page.Records {
			names = append(names, r["Name"].(string))
		}
		require.Equal(t, tc.names, names, tc.where)
	}

	require.JSONEq(t, `{"totalSize":0,"done":true,"records":[]}`, string(b.query(t, tok, "SELECT Id FROM Account WHERE Key__c = 'none'").body),
		"no match is an empty list, not null")

	b.query(t, tok, "SELECT Name FROM Account ORDER BY Name DESC LIMIT 2").json(t, &page)
	require.Equal(t, 2, page.TotalSize)
	require.Equal(t, "No key", page.Records[0]["Name"])
	require.Equal(t, "Account 2", page.Records[1]["Name"])
}

func TestQueryRefusals(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	for _, tc := range []struct{ soql, code string }{
		{"SELECT Id FORM Account", "MALFORMED_QUERY"},
		{"SELECT FROM Account", "MALFORMED_QUERY"},
		{"SELECT COUNT() FROM Account", "MALFORMED_QUERY"},
		{"SELECT Id FROM Account WHERE Name LIKE 'A%'", "MALFORMED_QUERY"},
		{"SELECT Id FROM Account WHERE Name = 'open", "MALFORMED_QUERY"},
		{"", "MALFORMED_QUERY"},
		{"SELECT Id FROM Widget__c", "INVALID_TYPE"},
		{"SELECT Id, Colour__c FROM Account", "INVALID_FIELD"},
		{"SELECT Id FROM Account WHERE Colour__c = 'red'", "INVALID_FIELD"},
		{"SELECT Id FROM Account ORDER BY Colour__c", "INVALID_FIELD"},
	} {
		a := b.query(t, tok, tc.soql)
		require.Equal(t, http.StatusBadRequest, a.status, tc.soql)
		require.Equal(t, tc.code, errorsOf(t, a)[0].ErrorCode, tc.soql)
	}
	for _, locator := range []string{"01gXXXXXXXXXXXXXXX-3", "nonsense", "01gXXXXXXXXXXXXXXX-x"} {
		a := b.send(t, http.MethodGet, v60+"/query/"+locator, tok, "")
		require.Equal(t, http.StatusBadRequest, a.status)
		require.Equal(t, "INVALID_QUERY_LOCATOR", errorsOf(t, a)[0].ErrorCode)
	}
}

func TestQueryLocatorLastsTwoDays(t *testing.T) {
	b := setup(t, func(o *Options) { o.BatchSize = 2 }, nil)
	tok := b.token(t)
	b.upsertAccounts(t, tok, 0, 3)
	var page queryResult
	b.query(t, tok, "SELECT Id FROM Account").json(t, &page)
	require.False(t, page.Done)

	b.clock.Advance(47 * time.Hour)
	tok = b.token(t)
	require.Equal(t, http.StatusOK, b.send(t, http.MethodGet, page.NextRecordsURL, tok, "").status)
	b.clock.Advance(time.Hour)
	tok = b.token(t)
	a := b.send(t, http.MethodGet, page.NextRecordsURL, tok, "")
	require.Equal(t, http.StatusBadRequest, a.status, "past two days the locator is gone")
	require.Equal(t, "INVALID_QUERY_LOCATOR", errorsOf(t, a)[0].ErrorCode)
}

func TestQueryBatchSizeHeader(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	for i := range 450 {
		_, err := b.fake.Insert("Account", map[string]any{"Key__c": fmt.Sprint(i)})
		require.NoError(t, err)
	}
	sizes := func(header string) []int {
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+v60+"/query?q=SELECT+Id+FROM+Account", nil)
		require.NoError(t, err)
		var out []int
		for {
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Sforce-Query-Options", header)
			res, err := b.srv.Client().Do(req)
			require.NoError(t, err)
			var page queryResult
			readJSON(t, res, &page)
			out = append(out, len(page.Records))
			if page.Done {
				return out
			}
			req, err = http.NewRequest(http.MethodGet, b.srv.URL+page.NextRecordsURL, nil)
			require.NoError(t, err)
		}
	}
	require.Equal(t, []int{450}, sizes(""), "2000 by default")
	require.Equal(t, []int{250, 200}, sizes("batchSize=250"))
	require.Equal(t, []int{200, 200, 50}, sizes("batchSize=5"), "no fewer than 200")
}
