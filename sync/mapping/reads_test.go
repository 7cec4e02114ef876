package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// req and opt are a required and an optional read by target body.x.
func req(field string) Read { return Read{Field: field, Target: "body.x"} }
func opt(field string) Read { return Read{Field: field, Target: "body.x", Optional: true} }

func TestReadsByShape(t *testing.T) {
	cases := []struct {
		expr string
		want []Read
	}{
		{`.email`, []Read{req("email")}},
		{`.address.city`, []Read{req("address")}},
		{`.address | .city`, []Read{req("address")}},
		{`.items[] | .name`, []Read{req("items")}},
		{`."email"`, []Read{req("email")}},
		{`.["first name"]`, []Read{req("first name")}},
		{`.email?`, []Read{req("email")}},
		{`.x // "d"`, []Read{opt("x")}},
		{`.nickname // .first`, []Read{req("first"), opt("nickname")}},
		{`.a // .b // "none"`, []Read{opt("a"), opt("b")}},
		{`(.a | ascii_downcase) // .a`, []Read{req("a")}}, // required once is required
		{`{email: .email, names: [.first, .last]}`, []Read{req("email"), req("first"), req("last")}},
		{`{email, $key, "first name", (.k): .v}`, []Read{req("email"), req("first name"), req("k"), req("v")}},
		{`.email | ascii_downcase`, []Read{req("email")}},
		{`ltrimstr(.prefix)`, []Read{req("prefix")}},
		{`.name | test(.pattern)`, []Read{req("name")}}, // test's argument sees .name, not the payload
		{`[.phone, .email] | map(select(. != null)) | first`, []Read{req("email"), req("phone")}},
		{`.items | map(.price) | add`, []Read{req("items")}},
		{`.tags | sort_by(.weight)`, []Read{req("tags")}},
		{`if .vip then .gold_email else .email end`, []Read{req("email"), req("gold_email"), req("vip")}},
		{`if .a then 1 elif .b then 2 else .c end`, []Read{req("a"), req("b"), req("c")}},
		{`"\(.first) \(.last)"`, []Read{req("first"), req("last")}},
		{`@base64 "\(.user):\(.pass)"`, []Read{req("pass"), req("user")}},
		{`.a[.n]`, []Read{req("a"), req("n")}},
		{`.a[1:.end]`, []Read{req("a"), req("end")}},
		{`. as {email: $e, $name} | $e + $name`, []Read{req("email"), req("name")}},
		{`.first as $f | .last + $f`, []Read{req("first"), req("last")}},
		{`try .amount catch .other`, []Read{req("amount")}},
		{`reduce .items[] as $i (.base; . + $i.qty)`, []Read{req("base"), req("items")}},
		{`foreach .items[] as $i (0; . + $i; .total)`, []Read{req("items")}},
		{`label $out | .a`, []Read{req("a")}},
		{`-.amount`, []Read{req("amount")}},
		{`.amount * 100 + .fee`, []Read{req("amount"), req("fee")}},
		{`sub("x"; .replacement) | .s`, nil},
		{`.s | sub(.pattern; "y")`, []Read{req("s")}},
		{`del(.secret)`, []Read{opt("secret")}},
		{`.a = .b`, []Read{opt("a"), req("b")}},
		{`.a |= .b`, []Read{opt("a")}},
		{`def f: .hidden; f`, nil},
		{`def f(g): g; f(.arg)`, nil},
		{`$key`, nil},
		{`. + {key: $key}`, nil},
		{`..`, nil},
		{`"usd"`, nil},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			m, err := Compile(map[string]string{"x": c.expr}, "")
			require.NoError(t, err)
			require.Equal(t, c.want, m.Reads())
		})
	}
}

func TestReadsNameTheirTargets(t *testing.T) {
	m, err := Compile(map[string]string{
		"properties.email":     ".emial",
		"properties.firstname": ".first",
		"name":                 `.first + " " + .last`,
		"metadata.key":         "$key",
		"nickname":             `.nickname // .first`,
	}, "")
	require.NoError(t, err)
	require.Equal(t, []Read{
		{Field: "emial", Target: "body.properties.email"},
		{Field: "first", Target: "body.name"},
		{Field: "first", Target: "body.nickname"},
		{Field: "first", Target: "body.properties.firstname"},
		{Field: "last", Target: "body.name"},
		{Field: "nickname", Target: "body.nickname", Optional: true},
	}, m.Reads())

	whole, err := Compile(nil, `{email, metadata: {syncdesk_key: $key}}`)
	require.NoError(t, err)
	require.Equal(t, []Read{{Field: "email", Target: "body"}}, whole.Reads())
}

func TestReadsIsACopy(t *testing.T) {
	m, err := Compile(map[string]string{"email": ".email"}, "")
	require.NoError(t, err)
	m.Reads()[0].Field = "changed"
	require.Equal(t, "email", m.Reads()[0].Field)
}
