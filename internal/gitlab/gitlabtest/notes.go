package gitlabtest

import (
	"net/http"
	"strconv"
	"time"
)

// AddDiscussion starts a discussion on merge request mrIID and returns its
// id and its first note's id. A nil pos makes a general comment (an
// individual note); a Position makes a diff note on the current diff.
func (s *Server) AddDiscussion(path string, mrIID int, author, body string, pos *Position) (string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(path)
	p.refs = nil
	s.sync(p)
	d := s.startDiscussion(p, s.mr(p, mrIID, "AddDiscussion"), author, body, pos, pos == nil)
	return d.id, d.notes[0].ID
}

func (s *Server) startDiscussion(p *project, m *mr, author, body string, pos *Position, individual bool) *discussion {
	n := &mrNote{Note: Note{Author: author, Body: body}, resolvable: !individual}
	s.fillNote(&n.Note, time.Now())
	switch {
	case pos != nil:
		v := m.versions[len(m.versions)-1]
		n.typ, n.pos, n.shas = "DiffNote", &Position{Path: pos.Path, Line: pos.Line}, [3]string{v.base, v.start, v.head}
	case !individual:
		n.typ = "DiscussionNote"
	}
	d := &discussion{id: fakeSHA("discussion", p.path, itoa(n.ID)), individual: individual, notes: []*mrNote{n}}
	m.discussions = append(m.discussions, d)
	return d
}

// Discussion returns the notes of discussion id on merge request mrIID in
// order: the first, then its replies.
func (s *Server) Discussion(path string, mrIID int, id string) []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := findDiscussion(s.mr(s.project(path), mrIID, "Discussion"), id)
	if d == nil {
		return nil
	}
	out := make([]Note, len(d.notes))
	for i, n := range d.notes {
		out[i] = n.Note
	}
	return out
}

// MRNotes returns every note on merge request iid, system notes included,
// oldest first.
func (s *Server) MRNotes(path string, iid int) []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Note
	for _, n := range allNotes(s.mr(s.project(path), iid, "MRNotes")) {
		out = append(out, n.Note)
	}
	return out
}

func allNotes(m *mr) []*mrNote {
	var out []*mrNote
	for _, d := range m.discussions {
		out = append(out, d.notes...)
	}
	return out
}

func findDiscussion(m *mr, id string) *discussion {
	for _, d := range m.discussions {
		if d.id == id {
			return d
		}
	}
	return nil
}

func (c *ctx) mrNoteJSON(m *mr, n *mrNote) map[string]any {
	out := c.noteJSON(n.Note, n.typ, "MergeRequest", m.id, m.IID)
	out["resolvable"] = n.resolvable
	if n.resolvable {
		out["resolved"], out["resolved_by"], out["resolved_at"] = n.resolved, nil, nil
	}
	if n.pos != nil {
		out["position"] = map[string]any{
			"base_sha": n.shas[0], "start_sha": n.shas[1], "head_sha": n.shas[2], "position_type": "text",
			"old_path": n.pos.Path, "new_path": n.pos.Path, "old_line": nil, "new_line": n.pos.Line,
		}
	}
	return out
}

func (c *ctx) discussionJSON(m *mr, d *discussion) map[string]any {
	notes := make([]any, len(d.notes))
	for i, n := range d.notes {
		notes[i] = c.mrNoteJSON(m, n)
	}
	return map[string]any{"id": d.id, "individual_note": d.individual, "notes": notes}
}

// listMRNotes serves …/notes: every note, system ones too, newest first
// unless sort=asc.
func (c *ctx) listMRNotes(m *mr) answer {
	byID := map[int64]*mrNote{}
	var flat []Note
	for _, n := range allNotes(m) {
		byID[n.ID] = n
		flat = append(flat, n.Note)
	}
	var out []any
	for _, n := range c.sortNotes(flat) {
		out = append(out, c.mrNoteJSON(m, byID[n.ID]))
	}
	return c.page(out)
}

func (c *ctx) createMRNote(m *mr) answer {
	body := c.q.str("body")
	if body == "" {
		return badRequest("body is missing")
	}
	d := c.s.startDiscussion(c.p, m, c.s.Username, body, nil, true)
	m.updated = time.Now()
	return answer{status: http.StatusCreated, body: c.mrNoteJSON(m, d.notes[0])}
}

// listDiscussions serves …/discussions in the order they were started.
func (c *ctx) listDiscussions(m *mr) answer {
	var out []any
	for _, d := range m.discussions {
		out = append(out, c.discussionJSON(m, d))
	}
	return c.page(out)
}

// createDiscussion serves POST …/discussions: a thread, on a diff line when
// position[new_path] and position[new_line] are given.
func (c *ctx) createDiscussion(m *mr) answer {
	body := c.q.str("body")
	if body == "" {
		return badRequest("body is missing")
	}
	var pos *Position
	if path := c.q.str("position[new_path]"); path != "" {
		line, err := strconv.Atoi(c.q.str("position[new_line]"))
		if err != nil {
			return badRequest("position[new_line] is invalid")
		}
		pos = &Position{Path: path, Line: line}
	}
	d := c.s.startDiscussion(c.p, m, c.s.Username, body, pos, false)
	m.updated = time.Now()
	return answer{status: http.StatusCreated, body: c.discussionJSON(m, d)}
}

// reply serves POST …/discussions/:id/notes. A reply to an individual note
// makes it a thread, as GitLab does.
func (c *ctx) reply(m *mr, id string) answer {
	d := findDiscussion(m, id)
	if d == nil {
		return notFound()
	}
	body := c.q.str("body")
	if body == "" {
		return badRequest("body is missing")
	}
	first := d.notes[0]
	if d.individual {
		if first.System {
			return message(http.StatusBadRequest, "400 Bad request - Note cannot be replied to")
		}
		d.individual, first.typ, first.resolvable = false, "DiscussionNote", true
	}
	n := &mrNote{Note: Note{Body: body}, typ: first.typ, pos: first.pos, shas: first.shas, resolvable: true}
	c.s.fillNote(&n.Note, time.Now())
	d.notes = append(d.notes, n)
	m.updated = time.Now()
	return answer{status: http.StatusCreated, body: c.mrNoteJSON(m, n)}
}
