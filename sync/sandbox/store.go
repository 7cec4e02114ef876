package sandbox

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// store holds one provider's objects in id order. It has no lock of its own:
// the provider's mutex guards it.
type store struct {
	noun string // "deal" → ids "deal_1", "deal_2", …
	last int
	seqs []int // ascending; ids are numbered, so "deal_10" must sort after "deal_9"
	objs map[int]map[string]any
}

func newStore(noun string) store {
	return store{noun: noun, objs: map[int]map[string]any{}}
}

func (s *store) id(seq int) string { return s.noun + "_" + strconv.Itoa(seq) }

// seq parses an id of this store; false for anything it could not have issued.
func (s *store) seq(id string) (int, bool) {
	n, ok := strings.CutPrefix(id, s.noun+"_")
	if !ok {
		return 0, false
	}
	seq, err := strconv.Atoi(n)
	return seq, err == nil && seq > 0 && strconv.Itoa(seq) == n
}

// add stores obj (which the store now owns) under a new id and returns it.
func (s *store) add(obj map[string]any) map[string]any {
	s.last++
	obj["id"] = s.id(s.last)
	s.seqs = append(s.seqs, s.last)
	s.objs[s.last] = obj
	return obj
}

// replace swaps the fields of id for obj (desired state), keeping the id.
func (s *store) replace(id string, obj map[string]any) (map[string]any, bool) {
	seq, ok := s.seq(id)
	if _, found := s.objs[seq]; !ok || !found {
		return nil, false
	}
	obj["id"] = id
	s.objs[seq] = obj
	return obj, true
}

// get returns the stored object itself; callers must not let it escape the lock.
func (s *store) get(id string) (map[string]any, bool) {
	seq, ok := s.seq(id)
	obj, found := s.objs[seq]
	return obj, ok && found
}

func (s *store) remove(id string) bool {
	seq, ok := s.seq(id)
	if _, found := s.objs[seq]; !ok || !found {
		return false
	}
	delete(s.objs, seq)
	i, _ := slices.BinarySearch(s.seqs, seq)
	s.seqs = slices.Delete(s.seqs, i, i+1)
	return true
}

// page returns up to limit objects after the cursor id ("" for the start),
// and the cursor of the next page ("" on the last one).
func (s *store) page(cursor string, limit int) ([]map[string]any, string, error) {
	after := 0
	if cursor != "" {
		seq, ok := s.seq(cursor)
		if !ok {
			return nil, "", fmt.Errorf("invalid cursor %q", cursor)
		}
		after = seq
	}
	// A cursor is the last id seen, not a position, so deletions between
	// pages neither skip nor repeat objects.
	i, _ := slices.BinarySearch(s.seqs, after+1)
	end := min(i+limit, len(s.seqs))
	items := make([]map[string]any, 0, end-i)
	for _, seq := range s.seqs[i:end] {
		items = append(items, s.objs[seq])
	}
	if end == len(s.seqs) {
		return items, "", nil
	}
	return items, s.id(s.seqs[end-1]), nil
}

// withKey returns the objects whose external_key is key, in id order. A scan:
// sandbox stores hold demo-sized data.
func (s *store) withKey(key string) []map[string]any {
	items := []map[string]any{}
	for _, seq := range s.seqs {
		if externalKey(s.objs[seq]) == key {
			items = append(items, s.objs[seq])
		}
	}
	return items
}

func (s *store) all() []map[string]any {
	items := make([]map[string]any, 0, len(s.seqs))
	for _, seq := range s.seqs {
		items = append(items, clone(s.objs[seq]))
	}
	return items
}

// externalKey is the caller's stable key of obj, "" when it has none.
func externalKey(obj map[string]any) string {
	k, _ := obj["external_key"].(string)
	return k
}

// clone deep-copies obj through JSON, which is also what makes a value given
// by Go code (an int, a struct) look as it would after a trip over HTTP.
func clone(obj map[string]any) map[string]any {
	var out map[string]any
	if err := json.Unmarshal(mustJSON(obj), &out); err != nil {
		panic(fmt.Sprintf("sandbox: clone: %v", err))
	}
	return out
}

// mustJSON encodes v, which is JSON-decoded data or test input that must be
// encodable; anything else is a programming error.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sandbox: value is not JSON-encodable: %v", err))
	}
	return b
}
