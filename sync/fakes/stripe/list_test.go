package stripe

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// makeCustomers creates n customers, with a payment intent between each
// two so that ids of both types interleave in time; it returns their ids
// oldest first.
func makeCustomers(t *testing.T, c *client, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		cus := c.ok(http.MethodPost, "/v1/customers", form("email", fmt.Sprintf("c%d@example.com", i),
			"metadata[n]", fmt.Sprint(i)))
		out[i] = cus["id"].(string)
		c.ok(http.MethodPost, "/v1/payment_intents", form("amount", "100", "currency", "usd"))
	}
	return out
}

// pageThrough follows starting_after while has_more says so.
func pageThrough(t *testing.T, c *client, limit int) (seen []string, pages int) {
	t.Helper()
	after := ""
	for {
		q := form("limit", fmt.Sprint(limit))
		if after != "" {
			q.Set("starting_after", after)
		}
		body := c.ok(http.MethodGet, "/v1/customers", q)
		require.Equal(t, "list", body["object"])
		require.Equal(t, "/v1/customers", body["url"])
		got := ids(body)
		require.LessOrEqual(t, len(got), limit)
		seen, pages = append(seen, got...), pages+1
		if body["has_more"] != true {
			return seen, pages
		}
		require.NotEmpty(t, got, "has_more with an empty page")
		after = got[len(got)-1]
	}
}

func TestListPagesNewestFirstWithNoGapsOrRepeats(t *testing.T) {
	_, c, _ := setup(t, Options{})
	made := makeCustomers(t, c, 57)
	newestFirst := slices.Clone(made)
	slices.Reverse(newestFirst)

	seen, pages := pageThrough(t, c, 10)
	require.Equal(t, newestFirst, seen, "every customer once, newest first")
	require.Equal(t, 6, pages)

	// ending_before walks back up: the page before the oldest ten.
	body := c.ok(http.MethodGet, "/v1/customers", form("limit", "10", "ending_before", made[9]))
	require.Equal(t, newestFirst[37:47], ids(body))
	require.Equal(t, true, body["has_more"])
	body = c.ok(http.MethodGet, "/v1/customers", form("limit", "10", "ending_before", made[50]))
	require.Equal(t, newestFirst[:6], ids(body))
	require.Equal(t, false, body["has_more"])

	body = c.ok(http.MethodGet, "/v1/customers", form("email", "c7@example.com"))
	require.Equal(t, []string{made[7]}, ids(body), "the email filter")
	require.Len(t, ids(c.ok(http.MethodGet, "/v1/customers", nil)), 10, "limit defaults to 10")
}

func TestListRefusesBadPaging(t *testing.T) {
	_, c, _ := setup(t, Options{})
	made := makeCustomers(t, c, 2)
	for _, q := range [][]string{
		{"limit", "0"}, {"limit", "101"}, {"limit", "ten"},
		{"starting_after", made[0], "ending_before", made[1]},
		{"starting_after", "cus_nobody"},
		{"sort", "asc"},
	} {
		a := c.do(http.MethodGet, "/v1/customers", form(q...))
		require.Equal(t, http.StatusBadRequest, a.status, "%v: %s", q, a.raw)
		require.Equal(t, "invalid_request_error", a.errField("type"))
	}
}

func TestPagingWhileOthersCreate(t *testing.T) {
	_, c, _ := setup(t, Options{})
	before := makeCustomers(t, c, 60)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.ok(http.MethodPost, "/v1/customers", form("email", fmt.Sprintf("late%d@example.com", i)))
		}()
	}
	seen, _ := pageThrough(t, c, 7)
	wg.Wait()

	count := map[string]int{}
	for _, id := range seen {
		count[id]++
		require.Equal(t, 1, count[id], "%s seen twice", id)
	}
	for _, id := range before {
		require.Equal(t, 1, count[id], "%s, there before paging began, was missed", id)
	}
}
