package config

import (
	"maps"
	"os"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// checkHeaders checks headers sent as configured (a service's, the
// collector's): each name is an HTTP header name, each value's environment
// variables are set and not empty, and the value, once they are read, is
// one a header can carry. Go's HTTP client refuses the request otherwise,
// at every send, with words that name no setting.
func checkHeaders(bad func(setting, format string, a ...any), headers map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		setting := "headers." + name
		v, missing := ExpandEnv(headers[name])
		empty := emptyVars(headers[name])
		switch {
		case !httpguts.ValidHeaderFieldName(name):
			bad(setting, "%q is not an HTTP header name", name)
		case len(missing) > 0:
			bad(setting, "environment variable %s is not set", strings.Join(missing, ", "))
		case len(empty) > 0:
			bad(setting, "environment variable %s is empty", strings.Join(empty, ", "))
		case !httpguts.ValidHeaderFieldValue(v):
			bad(setting, "the value holds characters a header cannot carry (a line break at the end of a variable read from a file?)")
		}
	}
}

// emptyVars names the environment variables raw refers to that are set
// but empty: a header such as "Bearer ${TOKEN}" would go out without its
// credential.
func emptyVars(raw string) []string {
	var out []string
	for _, m := range envRef.FindAllStringSubmatch(raw, -1) {
		if v, ok := os.LookupEnv(m[1]); ok && v == "" {
			out = append(out, m[1])
		}
	}
	return out
}
