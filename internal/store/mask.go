package store

import (
	"bytes"
	"encoding/json"
)

// SetMask has fn mask the free text the journal keeps from now on (nil:
// none): steps' errors, signals and results, items' errors, events' data,
// whether written here or applied from another journal's batch, and in
// what the tap hears. The text comes from agents and servers and may
// carry a secret of cadre's own (a token an error quotes back, a key an
// agent printed); fn is where it stops.
func (s *Store) SetMask(fn func(string) string) {
	if fn == nil {
		s.maskFn.Store(nil)
		return
	}
	s.maskFn.Store(&fn)
}

// mask is text through the mask, or text when there is none.
func (s *Store) mask(text string) string {
	if fn := s.maskFn.Load(); fn != nil && text != "" {
		return (*fn)(text)
	}
	return text
}

// maskJSON is v with the mask applied to its strings. It is decoded and
// encoded again only when the mask finds something in its text, so the
// result is always JSON.
func (s *Store) maskJSON(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || s.mask(string(v)) == string(v) {
		return v
	}
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var doc any
	if d.Decode(&doc) != nil {
		return v // not JSON: jsonArg refuses it
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(s.maskAny(doc)) != nil {
		return v
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func (s *Store) maskAny(v any) any {
	switch v := v.(type) {
	case string:
		return s.mask(v)
	case []any:
		for i := range v {
			v[i] = s.maskAny(v[i])
		}
	case map[string]any:
		for k, x := range v {
			v[k] = s.maskAny(x)
		}
	}
	return v
}

// maskStep is st with its free text masked.
func (s *Store) maskStep(st Step) Step {
	st.Error = s.mask(st.Error)
	st.Signal, st.Result = s.maskJSON(st.Signal), s.maskJSON(st.Result)
	return st
}

// maskUpdate is u with its error masked; u's fields are not changed.
func (s *Store) maskUpdate(u ItemUpdate) ItemUpdate {
	if u.Error != nil {
		e := s.mask(*u.Error)
		u.Error = &e
	}
	return u
}

// maskEvents is events with their data masked, in a new slice.
func (s *Store) maskEvents(events []Event) []Event {
	out := make([]Event, len(events))
	for i, e := range events {
		e.Data = s.maskJSON(e.Data)
		out[i] = e
	}
	return out
}

// maskOp is op, from another journal, with its free text masked.
func (s *Store) maskOp(op Op) Op {
	if op.Step != nil {
		st := s.maskStep(*op.Step)
		op.Step = &st
	}
	if op.Update != nil {
		u := s.maskUpdate(*op.Update)
		op.Update = &u
	}
	if op.Events != nil {
		op.Events = s.maskEvents(op.Events)
	}
	return op
}
