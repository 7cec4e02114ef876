package salesforce

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestUpsertCreatesThenUpdatesTheSameRecord(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	const path = v60 + "/sobjects/Account/Key__c/acme-1"

	a := b.send(t, http.MethodPatch, path, tok, `{"Name":"California Wheat Corporation","Type":"New Customer"}`)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	var created map[string]any
	a.json(t, &created)
	id, _ := created["id"].(string)
	require.Equal(t, map[string]any{"id": id, "success": true, "errors": []any{}, "created": true}, created)
	requireValidID(t, "001", id)

	a = b.send(t, http.MethodPatch, path, tok, `{"BillingCity":"San Francisco"}`)
	require.Equal(t, http.StatusOK, a.status, "API 46.0 and later answer an update with 200: %s", a.body)
	require.JSONEq(t, fmt.Sprintf(`{"id":%q,"success":true,"errors":[],"created":false}`, id), string(a.body))

	recs := b.fake.Records("Account")
	require.Len(t, recs, 1, "an upsert never makes a second record for the same value")
	require.Equal(t, "acme-1", recs[0]["Key__c"], "the created record carries the external ID from the URL")
	require.Equal(t, "California Wheat Corporation", recs[0]["Name"], "an update keeps the fields it does not name")
	require.Equal(t, "San Francisco", recs[0]["BillingCity"])
	require.Equal(t, 1, b.fake.Creates("Account"))
	require.Equal(t, 1, b.fake.CountByField("Account", "Key__c", "acme-1"))
}

func TestUpsertBefore46AnswersWithoutCreatedAnd204(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	const path = "/services/data/v45.0/sobjects/Account/Key__c/old-1"

	a := b.send(t, http.MethodPatch, path, tok, `{"Name":"Old"}`)
	require.Equal(t, http.StatusCreated, a.status)
	var created map[string]any
	a.json(t, &created)
	require.NotContains(t, created, "created", "created appears from API 46.0 on")
	require.Equal(t, true, created["success"])

	a = b.send(t, http.MethodPatch, path, tok, `{"Name":"Older"}`)
	require.Equal(t, http.StatusNoContent, a.status, "API 45.0 and earlier answer an update with 204")
	require.Empty(t, a.body)
	require.Len(t, b.fake.Records("Account"), 1)
}

func TestUpsertRefusalsChangeNothing(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	for _, tc := range []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"external ID field in the body", "/sobjects/Account/Key__c/k", `{"Key__c":"k","Name":"A"}`, 400, "INVALID_FIELD"},
		{"Id in the body", "/sobjects/Account/Key__c/k", `{"Id":"001Fk0000000001IAA","Name":"A"}`, 400, "INVALID_FIELD"},
		{"a system field in the body", "/sobjects/Account/Key__c/k", `{"CreatedDate":"2020-01-01T00:00:00.000+0000"}`, 400, "INVALID_FIELD_FOR_INSERT_UPDATE"},
		{"unknown field", "/sobjects/Account/Key__c/k", `{"Colour__c":"red"}`, 400, "INVALID_FIELD"},
		{"field that is not an external ID", "/sobjects/Account/Name/Acme", `{"Type":"x"}`, 404, "NOT_FOUND"},
		{"field the object lacks", "/sobjects/Account/Nope__c/k", `{"Name":"A"}`, 404, "NOT_FOUND"},
		{"unknown object", "/sobjects/Widget__c/Key__c/k", `{"Name":"A"}`, 404, "NOT_FOUND"},
		{"body not JSON", "/sobjects/Account/Key__c/k", `{"Name":`, 400, "JSON_PARSER_ERROR"},
		{"body not an object", "/sobjects/Account/Key__c/k", `["Name"]`, 400, "JSON_PARSER_ERROR"},
		{"nested value", "/sobjects/Account/Key__c/k", `{"Name":{"a":1}}`, 400, "JSON_PARSER_ERROR"},
		{"updateOnly and no match", "/sobjects/Account/Key__c/k?updateOnly=true", `{"Name":"A"}`, 404, "NOT_FOUND"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := b.send(t, http.MethodPatch, v60+tc.path, tok, tc.body)
			require.Equal(t, tc.status, a.status, "%s", a.body)
			require.Equal(t, tc.code, errorsOf(t, a)[0].ErrorCode)
		})
	}
	require.Empty(t, b.fake.Records("Account"), "no refused upsert created anything")

	a := b.send(t, http.MethodPost, v60+"/sobjects/Account", tok, `{"id":"001D000000IqhSLIAZ","Name":"Express Donuts and Pies"}`)
	require.JSONEq(t, `[{"message":"The Id field should not be specified in the sobject data.","errorCode":"INVALID_FIELD"}]`, string(a.body),
		"the docs' example of a refused create")
	a = b.send(t, http.MethodPatch, v60+"/sobjects/Account/Key__c/k", tok, `{"Colour__c":"red"}`)
	require.JSONEq(t, `[{"message":"No such column 'Colour__c' on sobject of type Account","errorCode":"INVALID_FIELD","fields":["Colour__c"]}]`, string(a.body))
	for _, version := range []string{"v60", "60.0", "vX.0"} {
		a := b.send(t, http.MethodPatch, "/services/data/"+version+"/sobjects/Account/Key__c/k", tok, `{"Name":"A"}`)
		require.Equal(t, http.StatusNotFound, a.status, "version %q is not one", version)
	}
}

func TestUpsertOnASharedValueAnswers300ListingBoth(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	const path = v60 + "/sobjects/Account/Key__c/dup-1"
	require.Equal(t, http.StatusCreated, b.send(t, http.MethodPatch, path, tok, `{"Name":"First"}`).status)
	first := b.fake.Records("Account")[0]["Id"].(string)
	second, err := b.fake.Insert("Account", map[string]any{"Key__c": "dup-1", "Name": "Second"})
	require.NoError(t, err)

	for _, method := range []string{http.MethodPatch, http.MethodGet} {
		body := ""
		if method == http.MethodPatch {
			body = `{"Name":"Overwritten"}`
		}
		a := b.send(t, method, path, tok, body)
		require.Equal(t, http.StatusMultipleChoices, a.status, "%s: %s", method, a.body)
		var urls []string
		a.json(t, &urls)
		require.Equal(t, []string{v60 + "/sobjects/Account/" + first, v60 + "/sobjects/Account/" + second}, urls)
	}
	recs := b.fake.Records("Account")
	require.Len(t, recs, 2, "a 300 creates nothing")
	require.Equal(t, "First", recs[0]["Name"], "and updates nothing")
	require.Equal(t, "Second", recs[1]["Name"])
	require.Equal(t, 2, b.fake.CountByField("Account", "Key__c", "dup-1"))
}

func TestConcurrentUpsertsOfOneValueMakeOneRecord(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	const n = 50
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a, err := b.try(http.MethodPatch, v60+"/sobjects/Account/Key__c/race-1", tok, fmt.Sprintf(`{"Name":"writer %d"}`, i), nil)
			if err != nil {
				statuses <- -1
				return
			}
			statuses <- a.status
		})
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	require.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusOK: n - 1}, count, "one create, the rest updates, all 2xx")
	require.Equal(t, 1, b.fake.CountByField("Account", "Key__c", "race-1"))
	require.Equal(t, 1, b.fake.Creates("Account"))
}

func TestRecordsByID(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)

	a := b.send(t, http.MethodPost, v60+"/sobjects/Contact", tok, `{"LastName":"Smith","Email":"smith@example.com"}`)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	var res map[string]any
	a.json(t, &res)
	id := res["id"].(string)
	require.Equal(t, map[string]any{"id": id, "success": true, "errors": []any{}}, res, "a plain create says nothing of created")
	requireValidID(t, "003", id)
	created := b.clock.Now()

	b.clock.Advance(time.Minute)
	a = b.send(t, http.MethodPatch, v60+"/sobjects/Contact/"+id, tok, `{"lastname":"Jones"}`)
	require.Equal(t, http.StatusNoContent, a.status, "an update by id answers 204: %s", a.body)
	require.Empty(t, a.body)

	var rec map[string]any
	b.send(t, http.MethodGet, v60+"/sobjects/Contact/"+id, tok, "").json(t, &rec)
	require.Equal(t, map[string]any{"type": "Contact", "url": v60 + "/sobjects/Contact/" + id}, rec["attributes"])
	require.Equal(t, "Jones", rec["LastName"], "field names are case-insensitive, answers use the canonical one")
	require.Equal(t, "smith@example.com", rec["Email"])
	require.Nil(t, rec["Key__c"], "an unset field reads as null")
	require.Equal(t, created.Format(dateTimeLayout), rec["CreatedDate"])
	require.Equal(t, created.Add(time.Minute).Format(dateTimeLayout), rec["LastModifiedDate"])

	var some map[string]any
	b.send(t, http.MethodGet, v60+"/sobjects/Contact/"+id[:15]+"?fields=LastName", tok, "").json(t, &some)
	require.Equal(t, []string{"LastName", "attributes"}, keys(some), "fields= limits the answer; a 15-character id works")

	var byEmail map[string]any
	b.send(t, http.MethodGet, v60+"/sobjects/Contact/Email/smith@example.com", tok, "").json(t, &byEmail)
	require.Equal(t, id, byEmail["Id"], "read by external ID")

	a = b.send(t, http.MethodPost, v60+"/sobjects/Contact/Id", tok, `{"LastName":"Lee"}`)
	require.Equal(t, http.StatusCreated, a.status, "POST sobjects/{Object}/Id creates too")

	for _, path := range []string{"/sobjects/Contact/003Fk0000000zzzAAA", "/sobjects/Contact/Key__c/none"} {
		require.Equal(t, http.StatusNotFound, b.send(t, http.MethodGet, v60+path, tok, "").status, path)
	}
	require.Equal(t, http.StatusNotFound, b.send(t, http.MethodPatch, v60+"/sobjects/Contact/003Fk0000000zzzAAA", tok, `{"LastName":"x"}`).status)
	a = b.send(t, http.MethodPut, v60+"/sobjects/Contact/"+id, tok, `{"LastName":"x"}`)
	require.Equal(t, http.StatusMethodNotAllowed, a.status)
	require.Equal(t, "METHOD_NOT_ALLOWED", errorsOf(t, a)[0].ErrorCode)
	require.Equal(t, 2, b.fake.Creates("Contact"))
}

func TestExternalIDValueIsOnePathSegment(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	require.Equal(t, http.StatusCreated, b.send(t, http.MethodPatch, v60+"/sobjects/Account/Key__c/order%2F7%20b", tok, `{}`).status)
	require.Equal(t, 1, b.fake.CountByField("Account", "Key__c", "order/7 b"), "an escaped slash is part of the value")
	require.Equal(t, http.StatusNotFound, b.send(t, http.MethodPatch, v60+"/sobjects/Account/Key__c/order/7", tok, `{}`).status,
		"an unescaped one is another path")
}

func TestUniqueExternalIDRefusesDuplicatesAndIgnoresCase(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	a := b.send(t, http.MethodPost, v60+"/sobjects/Invoice__c", tok, `{"Key__c":"INV-1","Amount__c":10}`)
	require.Equal(t, http.StatusCreated, a.status)
	var res saveResult
	a.json(t, &res)
	requireValidID(t, "a00", res.ID)

	a = b.send(t, http.MethodPost, v60+"/sobjects/Invoice__c", tok, `{"Key__c":"inv-1","Amount__c":11}`)
	require.Equal(t, http.StatusBadRequest, a.status, "a unique field refuses a second record")
	require.Equal(t, apiError{Message: "duplicate value found: Key__c duplicates value on record with id: " + res.ID, ErrorCode: "DUPLICATE_VALUE"}, errorsOf(t, a)[0])

	a = b.send(t, http.MethodPatch, v60+"/sobjects/Invoice__c/Key__c/inv-1", tok, `{"Amount__c":12}`)
	require.Equal(t, http.StatusOK, a.status, "a unique, case-insensitive field matches inv-1 to INV-1")
	require.Len(t, b.fake.Records("Invoice__c"), 1)
	require.Equal(t, "12", fmt.Sprint(b.fake.Records("Invoice__c")[0]["Amount__c"]))

	require.Equal(t, http.StatusCreated, b.send(t, http.MethodPatch, v60+"/sobjects/Account/Key__c/ABC", tok, `{}`).status)
	require.Equal(t, http.StatusCreated, b.send(t, http.MethodPatch, v60+"/sobjects/Account/Key__c/abc", tok, `{}`).status,
		"a field that is not unique matches case-sensitively")
}

func TestCaseSensitiveUniqueField(t *testing.T) {
	b := setup(t, func(o *Options) {
		o.Objects[2].CaseSensitive = []string{"Key__c"}
	}, nil)
	tok := b.token(t)
	require.Equal(t, http.StatusCreated, b.send(t, http.MethodPatch, v60+"/sobjects/Invoice__c/Key__c/INV-1", tok, `{}`).status)
	require.Equal(t, http.StatusCreated, b.send(t, http.MethodPatch, v60+"/sobjects/Invoice__c/Key__c/inv-1", tok, `{}`).status)
	require.Len(t, b.fake.Records("Invoice__c"), 2)
}

func TestIDsLookLikeSalesforces(t *testing.T) {
	require.Equal(t, "IAH", caseSuffix("001D000000IRFma"), "the docs' example id 001D000000IRFmaIAH")
	require.Equal(t, "001Fk0000000001IAA", recordID("001", 1), "F, the fourth character, is the only capital")
	seen := map[string]bool{}
	for n := range uint64(5000) {
		id := recordID("a01", n)
		require.False(t, seen[id], "ids are unique")
		seen[id] = true
	}
}

func TestNewRefusesBadObjects(t *testing.T) {
	clients := []Client{{ID: "c", Secret: "s"}}
	for _, objs := range [][]Object{
		nil,
		{{Name: "Widget", Fields: []string{"Name"}}},
		{{Name: "Account", Fields: []string{"Name"}, ExternalIDs: []string{"Key__c"}}},
		{{Name: "Account", Fields: []string{"Name", "Key__c"}, Unique: []string{"Key__c"}}},
		{{Name: "Account", KeyPrefix: "01", Fields: []string{"Name"}}},
	} {
		_, err := New(Options{Objects: objs, Clients: clients})
		require.Error(t, err, "%+v", objs)
	}
	_, err := New(Options{Objects: testObjects()})
	require.Error(t, err, "no client")
	_, err = New(Options{Objects: append(testObjects(), Object{Name: "account", KeyPrefix: "001"}), Clients: clients})
	require.ErrorContains(t, err, "given twice", "an object twice")
}

func TestRequestsAreCountedPerEndpoint(t *testing.T) {
	b := setup(t, nil, nil)
	tok := b.token(t)
	b.send(t, http.MethodPatch, v60+"/sobjects/Account/Key__c/c1", tok, `{}`)
	b.send(t, http.MethodPatch, v60+"/sobjects/Account/Key__c/c1", tok, `{}`)
	b.send(t, http.MethodGet, v60+"/sobjects/Account/Key__c/c1", tok, "")
	b.send(t, http.MethodGet, v60+"/query?q=SELECT+Id+FROM+Account", tok, "")
	b.send(t, http.MethodGet, "/nowhere", tok, "")
	require.Equal(t, map[Endpoint]int{EndpointToken: 1, EndpointUpsert: 2, EndpointReadByExternalID: 1, EndpointQuery: 1, EndpointOther: 1},
		b.fake.Requests())
}

// requireValidID checks an 18-character id: its prefix, and a suffix that
// encodes the case of the first fifteen characters.
func requireValidID(t *testing.T, prefix, id string) {
	t.Helper()
	require.Len(t, id, 18)
	require.Equal(t, prefix, id[:3])
	require.Equal(t, caseSuffix(id[:15]), id[15:])
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
