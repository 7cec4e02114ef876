package stripe

import (
	"net/url"
	"testing"
)

// Bodies and queries come from outside: no input may panic the parsers.

func FuzzDecodeBrackets(f *testing.F) {
	for _, seed := range []string{
		"metadata[k]=v", "shipping[address][city]=Paris&shipping[name]=J", "expand[]=a&expand[]=b",
		"a[0]=x&a[1]=y", "a=1&a[b]=2", "a[]=1&a[b]=2", "a[[b]]=1", "]=1", "a[b=1", "a[][b]=1", "=",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		values, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		p, aerr := decodeBrackets(values)
		if aerr != nil {
			return
		}
		if _, cerr := check(p, customerParams, ""); cerr != nil && cerr.status != 400 {
			t.Fatalf("a bad parameter is a 400, got %d", cerr.status)
		}
	})
}

func FuzzParseQuery(f *testing.F) {
	for _, seed := range []string{
		`email:'a@b.c'`, `metadata["k"]:"v" AND -name~"abc"`, `amount>=10 OR amount<5`, `phone:null`,
		`metadata['k\'s']:'v'`, `-`, `metadata[`, `email:"`, `a AND`, `amount=3`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, q string) {
		parsed, err := parseQuery(q, paymentIntents.search, "payment_intent")
		if err != nil {
			return
		}
		if len(parsed.clauses) == 0 || len(parsed.clauses) > maxClauses {
			t.Fatalf("%q parsed into %d clauses", q, len(parsed.clauses))
		}
		parsed.matches(map[string]any{"amount": int64(5), "metadata": map[string]any{"k": "v"}, "currency": "usd"})
	})
}
