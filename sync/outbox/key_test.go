package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// A record's type and id are refused, in words that name the field and the
// character, when they hold an invisible formatting character: the bidi
// controls reorder how an id reads on a page, zero-width ones make two ids
// look alike. Letters of right-to-left scripts are text, and are taken.
func TestCheckKeyRefusesInvisibleFormattingCharacters(t *testing.T) {
	t.Parallel()
	bidi := []rune{0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C}
	invisible := []rune{0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD, 0xE0041}
	for _, r := range append(bidi, invisible...) {
		code := fmt.Sprintf("U+%04X", r)
		for _, tc := range []struct{ field, typ, id string }{
			{"id", "order", "12" + string(r) + "34"},
			{"type", "ord" + string(r) + "er", "1234"},
			{"id", "order", string(r)},
		} {
			err := CheckKey(tc.typ, tc.id)
			var inv *models.InvalidError
			require.True(t, errors.As(err, &inv), "%s in the %s: want a refusal, got %v", code, tc.field, err)
			require.Contains(t, inv.Reason, "the "+tc.field+" holds "+code, "%q", tc.typ+"/"+tc.id)
		}
	}
	for _, tc := range []struct{ typ, id, words string }{
		{"order", "", "the id must be 1 to 128 characters"},
		{"", "1", "the type must be 1 to 64 characters"},
		{"order", "a/b", "without spaces, slashes"},
		{"order", "a b", "without spaces, slashes"},
		{"order", "a\u2028b", "without spaces, slashes"},
		{"order", "a\x7fb", "control characters"},
		{"order", strings.Repeat("x", 129), "1 to 128"},
		{"order", "a\xffb", "1 to 128"},
	} {
		require.ErrorContains(t, CheckKey(tc.typ, tc.id), tc.words, "%q/%q", tc.typ, tc.id)
	}
	for _, id := range []string{"12345", "A:1", "B#2?3%4;5", "طلب-17", "הזמנה-3", "Ωμέγα", "注文１"} {
		require.NoError(t, CheckKey("order", id), id)
	}
}

// Order line-7 and order-line 7 are two records, and get two objects from
// a provider that replays idempotency keys: their creates' keys differ,
// though both read "order-line-7" with dashes between type and id.
func TestTwoRecordsWhoseTypeAndIDReadAlikeGetTwoObjects(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		pay := e.svcs[1].Config.Objects["payment"]
		e.svcs[1].Config.Objects = map[string]config.Object{"order": pay, "order-line": pay}
		e.svcs[1].Conn = connector.NewHTTP("payments", e.svcs[1].Config, e.redactr, nil)
		e.svcs = e.svcs[1:]
		eng := e.engine(db, Options{Concurrency: 2})
		for _, r := range [][2]string{{"order", "line-7"}, {"order-line", "7"}} {
			_, err := eng.Upsert(context.Background(), r[0], r[1], []byte(fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, len(r[0]))))
			require.NoError(t, err)
		}
		e.settle(eng)

		a, b := e.link("order", "line-7", "payments"), e.link("order-line", "7", "payments")
		for _, l := range []models.Link{a, b} {
			require.Equal(t, models.StatusSuccess, l.Status, "%s %s: %s", l.LocalType, l.LocalID, l.LastError)
		}
		require.NotEqual(t, a.ExternalID, b.ExternalID, "one object answered both creates")
		require.Len(t, e.pay.Objects(), 2)
		require.NotEqual(t, a.IdempotencyKey, b.IdempotencyKey)
	})
}

// A type without a dash keeps the key it always had, so that links made
// before keep theirs; the key of a type with one holds slashes, which no
// type or id holds.
func TestCreateKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "order-12345-create", models.CreateKey("order", "12345"))
	require.Equal(t, "order-line-7-create", models.CreateKey("order", "line-7"))
	require.Equal(t, "order-line/7/create", models.CreateKey("order-line", "7"))
}
