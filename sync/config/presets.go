package config

import (
	"embed"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// presetFiles are the providers shipped in the binary (README, "Presets").
//
//go:embed presets/*.yaml
var presetFiles embed.FS

// Presets names the shipped presets, sorted.
func Presets() []string {
	entries, _ := presetFiles.ReadDir("presets")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return out
}

// anyObject is the preset object that stands for every remote not named
// (Salesforce: any sObject); {remote} and {key_field} in its values are the
// object's own.
const anyObject = "*"

// expandPresets rewrites, in a parsed configuration file, every service
// that names a preset: the preset's settings, with the file's on top, key
// by key. Each routed type starts from the preset's object named by its
// remote (default: the type's own name).
func expandPresets(doc *yaml.Node) (expanded bool, err error) {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	services := member(root, "services")
	if services == nil || services.Kind != yaml.MappingNode {
		return false, nil
	}
	var errs []string
	for i := 0; i+1 < len(services.Content); i += 2 {
		name, svc := services.Content[i].Value, services.Content[i+1]
		p := member(svc, "preset")
		if p == nil || p.Value == "" {
			continue
		}
		out, err := expandService(name, p.Value, svc)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		services.Content[i+1], expanded = out, true
	}
	if len(errs) > 0 {
		return false, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return expanded, nil
}

func expandService(name, preset string, svc *yaml.Node) (*yaml.Node, error) {
	raw, err := presetFiles.ReadFile("presets/" + preset + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("setting services.%s.preset: %q is not a preset (%s)", name, preset, strings.Join(Presets(), ", "))
	}
	var pdoc yaml.Node
	if err := yaml.Unmarshal(raw, &pdoc); err != nil {
		return nil, fmt.Errorf("preset %s: %w", preset, err) // a shipped file: a test reads every one
	}
	base := pdoc.Content[0]
	if member(svc, "webhook") == nil {
		base = without(base, "webhook") // webhooks are taken only where the file asks for them
	}
	templates := member(base, "objects")
	out := merge(without(base, "objects"), without(svc, "objects"))
	objs := member(svc, "objects")
	if objs == nil {
		return out, nil
	}
	merged := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(objs.Content); i += 2 {
		typ, obj := objs.Content[i].Value, objs.Content[i+1]
		remote := typ
		if r := member(obj, "remote"); r != nil {
			remote = r.Value
		}
		tmpl := member(templates, remote)
		if tmpl == nil {
			if tmpl = member(templates, anyObject); tmpl == nil {
				return nil, fmt.Errorf("setting services.%s.objects.%s.remote: the %s preset has no object %q (%s)",
					name, typ, preset, remote, strings.Join(keys(templates), ", "))
			}
			keyField := scalar(obj, "key_field", scalar(tmpl, "key_field", ""))
			tmpl = substitute(tmpl, strings.NewReplacer("{remote}", remote, "{key_field}", keyField))
		}
		o := merge(tmpl, obj)
		if member(o, "remote") == nil {
			o.Content = append(o.Content, str("remote"), str(remote))
		}
		merged.Content = append(merged.Content, objs.Content[i], o)
	}
	out.Content = append(out.Content, str("objects"), merged)
	return out, nil
}

// merge returns base with over on top: maps merge key by key, anything
// else in over replaces what base says, and ~ (null) in over takes base's
// key away (a preset's body field the records do not have).
func merge(base, over *yaml.Node) *yaml.Node {
	if base == nil || base.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode {
		return over
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: slices.Clone(base.Content)}
	for i := 0; i+1 < len(over.Content); i += 2 {
		k, v := over.Content[i], over.Content[i+1]
		at := keyIndex(out, k.Value)
		switch {
		case v.Tag == "!!null" && at >= 0:
			out.Content = slices.Delete(out.Content, at, at+2)
		case v.Tag == "!!null":
		case at < 0:
			out.Content = append(out.Content, k, v)
		default:
			out.Content[at+1] = merge(out.Content[at+1], v)
		}
	}
	return out
}

// keyIndex is where key sits in a mapping node's content, or -1.
func keyIndex(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// member returns the value under key in a mapping node, or nil.
func member(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	if i := keyIndex(n, key); i >= 0 {
		return n.Content[i+1]
	}
	return nil
}

func without(n *yaml.Node, key string) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != key {
			out.Content = append(out.Content, n.Content[i], n.Content[i+1])
		}
	}
	return out
}

func scalar(n *yaml.Node, key, def string) string {
	if v := member(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return def
}

func keys(n *yaml.Node) []string {
	var out []string
	for i := 0; n != nil && i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != anyObject {
			out = append(out, k)
		}
	}
	return out
}

// substitute copies n with r applied to every scalar value.
func substitute(n *yaml.Node, r *strings.Replacer) *yaml.Node {
	c := *n
	if c.Kind == yaml.ScalarNode {
		c.Value = r.Replace(c.Value)
		return &c
	}
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = substitute(k, r)
	}
	return &c
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// withPresets returns the file's bytes with its presets expanded, or the
// bytes as they are when it names none.
func withPresets(body []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil || len(doc.Content) == 0 {
		return body, nil // the strict decode that follows says what is wrong
	}
	expanded, err := expandPresets(&doc)
	if err != nil || !expanded {
		return body, err
	}
	return yaml.Marshal(&doc)
}
