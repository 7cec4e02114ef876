package mapping

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var testVars = Vars{Key: "sd-customer-42", LocalID: "42", LocalType: "customer", ExternalID: "cus_9"}

// render compiles and renders, and gives the body as JSON for comparison:
// JSON sorts keys and writes numbers exactly.
func render(t *testing.T, fields map[string]string, expr, payload string) (string, error) {
	t.Helper()
	m, err := Compile(fields, expr)
	require.NoError(t, err, "compile")
	body, err := m.Render([]byte(payload), testVars)
	if err != nil {
		return "", err
	}
	out, err := JSON(body)
	require.NoError(t, err, "encode %#v", body)
	return string(out), nil
}

func TestRender(t *testing.T) {
	cases := []struct {
		name    string
		fields  map[string]string
		expr    string
		payload string
		want    string
	}{
		{name: "rename", fields: map[string]string{"email": ".mail"},
			payload: `{"mail":"ana@example.com","other":1}`, want: `{"email":"ana@example.com"}`},
		{name: "nest", fields: map[string]string{"properties.email": ".email", "properties.firstname": ".first", "a.b.c": ".first"},
			payload: `{"email":"ana@example.com","first":"Ana"}`,
			want:    `{"a":{"b":{"c":"Ana"}},"properties":{"email":"ana@example.com","firstname":"Ana"}}`},
		{name: "constants", fields: map[string]string{"currency": `"usd"`, "amount": "1999", "ratio": "0.25", "capture": "false", "note": "null"},
			payload: `{}`, want: `{"amount":1999,"capture":false,"currency":"usd","note":null,"ratio":0.25}`},
		{name: "our key and ids at any path", fields: map[string]string{
			"metadata.syncdesk_key": "$key", "deep.er.key": "$key", "ref": `$local_type + ":" + $local_id`, "id": "$external_id"},
			payload: `{}`, want: `{"deep":{"er":{"key":"sd-customer-42"}},"id":"cus_9","metadata":{"syncdesk_key":"sd-customer-42"},"ref":"customer:42"}`},
		{name: "default for an absent field", fields: map[string]string{"name": `.nickname // "anonymous"`},
			payload: `{}`, want: `{"name":"anonymous"}`},
		{name: "default for a null field", fields: map[string]string{"name": `.nickname // .first`},
			payload: `{"nickname":null,"first":"Ana"}`, want: `{"name":"Ana"}`},
		{name: "default unused", fields: map[string]string{"name": `.nickname // "anonymous"`},
			payload: `{"nickname":"Nan"}`, want: `{"name":"Nan"}`},
		{name: "string interpolation", fields: map[string]string{"description": `"Order \(.number) for \(.customer.name)"`},
			payload: `{"number":1001,"customer":{"name":"Ana"}}`, want: `{"description":"Order 1001 for Ana"}`},
		{name: "null present is kept", fields: map[string]string{"phone": ".phone"},
			payload: `{"phone":null}`, want: `{"phone":null}`},
		{name: "lists and objects as values", fields: map[string]string{"tags": "[.a, .b]", "address": ".address"},
			payload: `{"a":"x","b":"y","address":{"city":"Lyon"}}`, want: `{"address":{"city":"Lyon"},"tags":["x","y"]}`},
		{name: "big integers stay exact", fields: map[string]string{"id": ".id", "next": ".small + 1"},
			payload: `{"id":123456789012345678901234567890,"small":9007199254740993}`,
			want:    `{"id":123456789012345678901234567890,"next":9007199254740994}`},
		{name: "arithmetic on amounts", fields: map[string]string{"amount": ".price * 100 | round"},
			payload: `{"price":19.99}`, want: `{"amount":1999}`},
		{name: "functions", fields: map[string]string{"email": ".email | ascii_downcase"},
			payload: `{"email":"Ana@Example.COM"}`, want: `{"email":"ana@example.com"}`},
		{name: "expressions with their own defs and labels",
			fields:  map[string]string{"a": `def twice(f): f * 2; twice(.n)`, "b": `label $out | (.n, 99) | ., break $out`, "c": `[.n, .n] | map(. + 1)`},
			payload: `{"n":5}`, want: `{"a":10,"b":5,"c":[6,6]}`},
		{name: "whole body expression", expr: `{email, metadata: {syncdesk_key: $key}} + (if .vip then {tier: "gold"} else {} end)`,
			payload: `{"email":"ana@example.com","vip":true}`,
			want:    `{"email":"ana@example.com","metadata":{"syncdesk_key":"sd-customer-42"},"tier":"gold"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := render(t, c.fields, c.expr, c.payload)
			require.NoError(t, err)
			require.JSONEq(t, c.want, got)
			require.Equal(t, c.want, got, "keys sorted, numbers exact")
		})
	}
}

func TestCompileErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		name   string
		fields map[string]string
		expr   string
		want   string
	}{
		{"parse error", map[string]string{"properties.email": ".email |", "ok": ".x"}, "",
			`body.properties.email: the expression ".email |" does not parse: unexpected EOF`},
		{"parse error in a whole body", nil, "{email: }",
			`body: the expression "{email: }" does not parse: unexpected token "}"`},
		{"unknown function", map[string]string{"name": "titlecase(.name)"}, "",
			"body.name: unknown function titlecase/1"},
		{"unknown variable", map[string]string{"metadata.syncdesk_key": "$keyy"}, "",
			"body.metadata.syncdesk_key: unknown variable $keyy (an expression can use $key, $local_id"},
		{"colliding targets", map[string]string{"address": ".address", "address.city": ".city"}, "",
			"body.address.city: lies inside body.address, which is set too"},
		{"colliding deeper", map[string]string{"a.b": "1", "a.b.c.d": "2", "a.bc": "3"}, "",
			"body.a.b.c.d: lies inside body.a.b"},
		{"empty segment", map[string]string{"metadata..key": "$key"}, "",
			"body.metadata..key: a target path is names joined by dots, with no empty name"},
		{"leading dot", map[string]string{".email": ".email"}, "", "body..email: a target path"},
		{"trailing dot", map[string]string{"email.": ".email"}, "", "body.email.: a target path"},
		{"empty expression", map[string]string{"email": "  "}, "", "body.email: the expression is empty"},
		{"modules", map[string]string{"email": `import "lib" as lib; .email`}, "", "body.email: modules and imports are not supported"},
		{"both forms", map[string]string{"a": "1"}, "{}", "body: give either a map of fields or one expression, not both"},
		{"neither form", nil, "", "body: give a map of fields or one expression"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Compile(c.fields, c.expr)
			require.Nil(t, m)
			require.ErrorContains(t, err, c.want)
			var me *Error
			require.ErrorAs(t, err, &me)
		})
	}
}

func TestRenderErrors(t *testing.T) {
	cases := []struct {
		name    string
		fields  map[string]string
		expr    string
		payload string
		want    string
	}{
		{"missing field", map[string]string{"properties.email": ".emial"}, "", `{"email":"ana@example.com"}`,
			"body.properties.email: reads .emial, which the record's payload does not have"},
		{"missing field with an odd name", map[string]string{"name": `.["first name"]`}, "", `{}`,
			`body.name: reads .["first name"], which the record's payload does not have`},
		{"missing field in a whole body", nil, "{email: .mail}", `{"email":"x"}`,
			"body: reads .mail, which the record's payload does not have"},
		{"several values", map[string]string{"item": ".items[]"}, "", `{"items":[1,2]}`,
			"body.item: the expression yields more than one value; a body field takes exactly one"},
		{"no value", map[string]string{"item": ".items[]"}, "", `{"items":[]}`,
			"body.item: the expression yields no value"},
		{"expression fails", map[string]string{"amount": ".amount - 1"}, "", `{"amount":"12"}`,
			`body.amount: the expression failed: cannot subtract: string ("12") and number (1)`},
		{"fails after a first value", map[string]string{"a": `1, error("boom")`}, "", `{}`,
			"body.a: the expression failed: error: boom"},
		{"the target in the middle yields nothing", map[string]string{"a": "1", "b": "empty", "c": "3"}, "", `{}`,
			"body.b: the expression yields no value"},
		{"the target in the middle fails", map[string]string{"a": "1", "b": ".x - 1", "c": "3"}, "", `{"x":"s"}`,
			"body.b: the expression failed: cannot subtract"},
		{"the target in the middle yields two", map[string]string{"a": "1", "b": "2, 3", "c": "4"}, "", `{}`,
			"body.b: the expression yields more than one value"},
		{"halt", map[string]string{"a": "halt"}, "", `{}`, "body.a: the expression stopped with halt"},
		{"whole body not an object", nil, `.email`, `{"email":"x"}`,
			"body: the expression yields string, not the object a body is"},
		{"payload not an object", map[string]string{"a": "1"}, "", `[1,2]`,
			"body: the record's payload is not a JSON object: it is an array"},
		{"payload not JSON", map[string]string{"a": "1"}, "", `{"a":`, "body: the record's payload is not a JSON object"},
		{"payload followed by more", map[string]string{"a": "1"}, "", `{} {}`,
			"body: the record's payload is not a JSON object: something follows the JSON value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, c.fields, c.expr, c.payload)
			require.ErrorContains(t, err, c.want)
			var me *Error
			require.ErrorAs(t, err, &me)
		})
	}
}

func TestRunawayExpressionIsStopped(t *testing.T) {
	for _, expr := range []string{"last(range(1e18))", "last(repeat(1))", "[limit(1e12; repeat(.))] | length"} {
		t.Run(expr, func(t *testing.T) {
			m, err := Compile(map[string]string{"n": expr}, "")
			require.NoError(t, err)
			start := time.Now()
			_, err = m.Render([]byte(`{}`), testVars)
			took := time.Since(start)
			// On a quiet machine the step budget stops it; on a very busy
			// one the clock may come first ("ran longer than"). Either way
			// it stops, promptly.
			require.Regexp(t, `body\.n: the expression ran (more|longer) than`, err.Error())
			require.ErrorContains(t, err, "stopped as a runaway (an endless loop?)")
			require.ErrorIs(t, err, ErrRunaway)
			require.Less(t, took, Timeout+time.Second)
		})
	}
}

// TestRenderConcurrently renders one compiled mapping from many goroutines
// at once, each with its own record, as the outbox's workers do.
func TestRenderConcurrently(t *testing.T) {
	m, err := Compile(map[string]string{
		"email": ".email | ascii_downcase", "metadata.syncdesk_key": "$key", "metadata.n": ".n * 2",
	}, "")
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Go(func() {
			for i := range 50 {
				n := g*1000 + i
				key := fmt.Sprintf("k-%d", n)
				body, err := m.Render(fmt.Appendf(nil, `{"email":"U%d@X.COM","n":%d}`, n, n), Vars{Key: key})
				if err != nil {
					errs <- err
					return
				}
				out, _ := JSON(body)
				want := fmt.Sprintf(`{"email":"u%d@x.com","metadata":{"n":%d,"syncdesk_key":"%s"}}`, n, 2*n, key)
				if string(out) != want {
					errs <- fmt.Errorf("got %s, want %s", out, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestErrorUnwraps(t *testing.T) {
	m, err := Compile(map[string]string{"a": `error("boom")`}, "")
	require.NoError(t, err)
	_, err = m.Render([]byte(`{}`), Vars{})
	var me *Error
	require.True(t, errors.As(err, &me))
	require.Equal(t, "body.a", me.Target)
	require.EqualError(t, me.Unwrap(), "error: boom")
}

func TestBudgetCountsSteps(t *testing.T) {
	b := &budget{start: time.Now().Add(time.Hour)} // the clock stays out of this test
	for i := range MaxSteps {
		if b.Done() != nil {
			t.Fatalf("step %d of %d: the budget ran out early", i+1, MaxSteps)
		}
	}
	require.NoError(t, b.Err())
	require.Equal(t, (<-chan struct{})(closed), b.Done(), "one step too many")
	require.ErrorIs(t, b.Err(), ErrRunaway)
	require.Equal(t, "more than 1000000 steps", b.spent)
	require.Equal(t, (<-chan struct{})(closed), b.Done(), "a spent budget stays spent")
}

func TestBudgetStopsSlowSteps(t *testing.T) {
	b := &budget{start: time.Now().Add(-Timeout - time.Millisecond)}
	for range 1023 {
		require.Nil(t, b.Done(), "the clock is read every 1024 steps")
	}
	require.Equal(t, (<-chan struct{})(closed), b.Done())
	require.Equal(t, "longer than 1s", b.spent)
	require.ErrorIs(t, b.Err(), ErrRunaway)
}

// TestBudgetLeavesRoomForRealMappings counts the steps of a heavy but sound
// mapping: line items of a large order, summed and reshaped. It must use a
// small part of the budget, or sound records would be stopped.
func TestBudgetLeavesRoomForRealMappings(t *testing.T) {
	m, err := Compile(map[string]string{
		"lines":  `.items | map({price: .price_id, quantity: .qty})`,
		"amount": `[.items[] | .qty * .unit] | add`,
		"name":   `.first + " " + .last | ascii_downcase`,
	}, "")
	require.NoError(t, err)
	payload := []byte(`{"first":"Ana","last":"López","items":[`)
	for i := range 1000 {
		if i > 0 {
			payload = append(payload, ',')
		}
		payload = fmt.Appendf(payload, `{"price_id":"price_%d","qty":%d,"unit":250}`, i, i%7+1)
	}
	payload = append(payload, "]}"...)
	doc, err := decodePayload(payload)
	require.NoError(t, err)
	_, err = m.run(doc, testVars)
	require.NoError(t, err)

	b := newBudget()
	iter := m.code.RunWithContext(b, doc, "k", "", "", "", end)
	for _, ok := iter.Next(); ok; _, ok = iter.Next() {
	}
	require.Less(t, b.steps, MaxSteps/10, "a 1000-line order must take under a tenth of the budget")
	t.Logf("a 1000-line order took %d steps of %d", b.steps, MaxSteps)
}
