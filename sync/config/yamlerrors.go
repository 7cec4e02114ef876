package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yaml.v3 reports a value of the wrong kind, or a misspelt setting, by the
// line it stands on ("line 4: cannot unmarshal !!str `soon` into
// time.Duration"). A person reading that at start has to count lines, and a
// line may hold several settings ("login: {window: soon}"). nameSettings
// finds the setting each such error is about in the file's own tree and
// says what it wants in words.
//
// The messages' shape is yaml.v3's (decode.go, terror and the knownFields
// check); the module is pinned in go.mod, and TestBadValuesNameTheSetting
// fails if the shape changes.
var (
	wrongKind = regexp.MustCompile("^line ([0-9]+): cannot unmarshal !!([a-z]+)(?: `(.*)`)? into (.+)$")
	unknown   = regexp.MustCompile(`^line ([0-9]+): field (.+) not found in type .+$`)
)

func nameSettings(body []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	var doc yaml.Node
	if yaml.Unmarshal(body, &doc) != nil {
		return err
	}
	var places []place
	walk(&doc, "", &places)
	out := make([]error, 0, len(te.Errors))
	for _, msg := range te.Errors {
		out = append(out, nameOne(places, msg))
	}
	return errors.Join(out...)
}

// place is a value in the file with the setting it belongs to; key is the
// key node that names it (nil for a list's item).
type place struct {
	setting string
	key     *yaml.Node
	value   *yaml.Node
}

func walk(n *yaml.Node, setting string, places *[]place) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, setting, places)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			name := k.Value
			if setting != "" {
				name = setting + "." + k.Value
			}
			*places = append(*places, place{setting: name, key: k, value: v})
			walk(v, name, places)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			name := fmt.Sprintf("%s[%d]", setting, i)
			*places = append(*places, place{setting: name, value: v})
			walk(v, name, places)
		}
	}
}

func nameOne(places []place, msg string) error {
	if m := unknown.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		for _, p := range places {
			if p.key != nil && p.key.Line == line && p.key.Value == m[2] {
				return fmt.Errorf("setting %s: there is no such setting (line %d)", p.setting, line)
			}
		}
		return errors.New(msg)
	}
	m := wrongKind.FindStringSubmatch(msg)
	if m == nil {
		return errors.New(msg)
	}
	line, _ := strconv.Atoi(m[1])
	tag, shown, into := m[2], m[3], m[4]
	var found *place
	for i, p := range places {
		if p.value.Line != line || !sameValue(p.value, tag, shown) {
			continue
		}
		found = &places[i] // the last, and so the innermost, on that line
	}
	if found == nil {
		return errors.New(msg)
	}
	return fmt.Errorf("setting %s: %s (line %d)", found.setting, wants(found.value, into), line)
}

// sameValue tells whether n is the value an error message shows: yaml.v3
// shows a scalar's first seven characters and "..." when it is longer than
// ten, and no value for a list or a mapping.
func sameValue(n *yaml.Node, tag, shown string) bool {
	switch tag {
	case "seq":
		return n.Kind == yaml.SequenceNode
	case "map":
		return n.Kind == yaml.MappingNode
	}
	if n.Kind != yaml.ScalarNode {
		return false
	}
	if cut, ok := strings.CutSuffix(shown, "..."); ok && len(n.Value) > 10 {
		return strings.HasPrefix(n.Value, cut)
	}
	return n.Value == shown
}

// wants says, for the Go type a value would not go into, what it should
// be. The value itself is quoted only where the setting takes a duration,
// a number or true/false: a string setting may hold a secret, and a
// mistyped one must not print it.
func wants(v *yaml.Node, into string) string {
	quoted := "`" + v.Value + "`"
	switch {
	case v.Kind != yaml.ScalarNode:
	case into == "time.Duration":
		return quoted + " is not a duration such as 30s, 5m or 8h"
	case into == "bool":
		return quoted + " is not true or false"
	case strings.HasPrefix(into, "int") || strings.HasPrefix(into, "uint"):
		return quoted + " is not a whole number"
	case strings.HasPrefix(into, "float"):
		return quoted + " is not a number"
	}
	given := map[yaml.Kind]string{yaml.SequenceNode: "a list", yaml.MappingNode: "a group of settings"}[v.Kind]
	if given == "" {
		given = "a single value"
	}
	switch {
	case strings.HasPrefix(into, "[]"):
		return "takes a list, not " + given
	case strings.HasPrefix(into, "map["):
		return "takes a group of settings, not " + given
	case into == "string":
		return "takes a single value, not " + given
	}
	return "does not take " + given + " (it goes into " + into + ")"
}
