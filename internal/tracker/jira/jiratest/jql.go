package jiratest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// query is a parsed JQL query: which issues it selects and how they are
// ordered (by key, or as added when it says nothing).
type query struct {
	match func(*Issue) bool
	less  func(a, b *Issue) bool
}

type jqlParser struct {
	s    *Server
	toks []string
	i    int
}

// parseJQL reads the JQL subset the package comment names; the error is
// the message Jira would answer 400 with.
func (s *Server) parseJQL(src string) (query, error) {
	toks, err := tokenize(src)
	if err != nil {
		return query{}, err
	}
	p := &jqlParser{s: s, toks: toks}
	if len(toks) == 0 || p.isWord("order") {
		return query{}, fmt.Errorf("Unbounded JQL queries are not allowed here. Please add a search restriction to your query.")
	}
	m, err := p.or()
	if err != nil {
		return query{}, err
	}
	q := query{match: m}
	if p.isWord("order") {
		if q.less, err = p.orderBy(); err != nil {
			return query{}, err
		}
	}
	if p.i < len(p.toks) {
		return query{}, fmt.Errorf("Error in the JQL Query: Expecting either 'OR' or 'AND' but got '%s'.", p.toks[p.i])
	}
	return q, nil
}

// tokenize splits JQL into words, quoted strings (kept with their quote
// so a value is told from a keyword), operators and punctuation.
func tokenize(src string) ([]string, error) {
	var toks []string
	rs := []rune(src)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '(' || r == ')' || r == ',' || r == '=':
			toks = append(toks, string(r))
			i++
		case r == '!' && i+1 < len(rs) && (rs[i+1] == '=' || rs[i+1] == '~'):
			toks = append(toks, string(rs[i:i+2]))
			i += 2
		case r == '~' || r == '<' || r == '>':
			return nil, fmt.Errorf("Error in the JQL Query: the operator '%c' is not supported here.", r)
		case r == '"' || r == '\'':
			var b strings.Builder
			b.WriteRune('"')
			j := i + 1
			for ; j < len(rs) && rs[j] != r; j++ {
				if rs[j] == '\\' && j+1 < len(rs) {
					j++
				}
				b.WriteRune(rs[j])
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("Error in the JQL Query: The quoted string '%s' has not been completed.", string(rs[i:]))
			}
			toks = append(toks, b.String())
			i = j + 1
		default:
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || strings.ContainsRune("_-.", rs[j])) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("Error in the JQL Query: The character '%c' is a reserved JQL character.", r)
			}
			toks = append(toks, string(rs[i:j]))
			i = j
		}
	}
	return toks, nil
}

func (p *jqlParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *jqlParser) isWord(w string) bool { return strings.EqualFold(p.peek(), w) }

func (p *jqlParser) expect(t string) error {
	if !strings.EqualFold(p.peek(), t) {
		return fmt.Errorf("Error in the JQL Query: Expecting '%s' but got '%s'.", t, p.peek())
	}
	p.i++
	return nil
}

func (p *jqlParser) or() (func(*Issue) bool, error) {
	left, err := p.and()
	for err == nil && p.isWord("or") {
		p.i++
		var right func(*Issue) bool
		if right, err = p.and(); err == nil {
			l := left
			left = func(is *Issue) bool { return l(is) || right(is) }
		}
	}
	return left, err
}

func (p *jqlParser) and() (func(*Issue) bool, error) {
	left, err := p.unary()
	for err == nil && p.isWord("and") {
		p.i++
		var right func(*Issue) bool
		if right, err = p.unary(); err == nil {
			l := left
			left = func(is *Issue) bool { return l(is) && right(is) }
		}
	}
	return left, err
}

func (p *jqlParser) unary() (func(*Issue) bool, error) {
	switch {
	case p.isWord("not"):
		p.i++
		m, err := p.unary()
		return func(is *Issue) bool { return err == nil && !m(is) }, err
	case p.peek() == "(":
		p.i++
		m, err := p.or()
		if err == nil {
			err = p.expect(")")
		}
		return m, err
	}
	return p.clause()
}

// clause reads field op value, or field [not] in (values).
func (p *jqlParser) clause() (func(*Issue) bool, error) {
	field := strings.ToLower(p.peek())
	get, ok := p.fieldOf(field)
	if !ok {
		return nil, fmt.Errorf("Field '%s' does not exist or you do not have permission to view it.", p.peek())
	}
	p.i++
	op := strings.ToLower(p.peek())
	p.i++
	if op == "not" {
		if err := p.expect("in"); err != nil {
			return nil, err
		}
		op = "not in"
	}
	var values []string
	switch op {
	case "=", "!=":
		values = []string{p.value()}
	case "in", "not in":
		if err := p.expect("("); err != nil {
			return nil, err
		}
		for values = []string{p.value()}; p.peek() == ","; {
			p.i++
			values = append(values, p.value())
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("Error in the JQL Query: the operator '%s' is not supported for the field '%s'.", op, field)
	}
	if err := p.s.checkValues(field, values); err != nil {
		return nil, err
	}
	negate := op == "!=" || op == "not in"
	return func(is *Issue) bool {
		hit := slices.ContainsFunc(get(is), func(have string) bool {
			return slices.ContainsFunc(values, func(want string) bool { return strings.EqualFold(have, want) })
		})
		return hit != negate
	}, nil
}

// value reads one value, a quoted string or a bare word.
func (p *jqlParser) value() string {
	v := p.peek()
	p.i++
	return strings.TrimPrefix(v, `"`)
}

// fieldOf returns what a field holds for an issue, as strings.
func (p *jqlParser) fieldOf(field string) (func(*Issue) []string, bool) {
	switch field {
	case "project":
		return func(is *Issue) []string { pk, _, _ := strings.Cut(is.Key, "-"); return []string{pk} }, true
	case "key", "issuekey", "issue", "id":
		return func(is *Issue) []string { return []string{is.Key} }, true
	case "labels":
		return func(is *Issue) []string { return is.Labels }, true
	case "status":
		return func(is *Issue) []string { return []string{is.Status} }, true
	case "statuscategory":
		return func(is *Issue) []string {
			c := p.s.category(is.Status)
			return []string{c, categoryNames[c][1], categoryNames[c][0]}
		}, true
	}
	return nil, false
}

// checkValues refuses a status or category that does not exist, as Jira
// does: a misspelt tracker.watch.state fails loudly instead of matching
// nothing.
func (s *Server) checkValues(field string, values []string) error {
	known := map[string]bool{}
	switch field {
	case "status":
		for from, ts := range s.workflow {
			known[strings.ToLower(from)] = true
			for _, t := range ts {
				known[strings.ToLower(t.To)] = true
			}
		}
		for _, is := range s.issues {
			known[strings.ToLower(is.Status)] = true
		}
	case "statuscategory":
		for k, v := range categoryNames {
			known[k], known[strings.ToLower(v[1])], known[v[0]] = true, true, true
		}
	default:
		return nil
	}
	for _, v := range values {
		if !known[strings.ToLower(v)] {
			return fmt.Errorf("The value '%s' does not exist for the field '%s'.", v, field)
		}
	}
	return nil
}

// orderBy reads ORDER BY key|created|updated|rank [ASC|DESC]; issues are
// created in key order here, so all of them sort by key.
func (p *jqlParser) orderBy() (func(a, b *Issue) bool, error) {
	p.i++
	if err := p.expect("by"); err != nil {
		return nil, err
	}
	switch strings.ToLower(p.peek()) {
	case "key", "issuekey", "created", "updated", "rank", "id":
	default:
		return nil, fmt.Errorf("Field '%s' does not exist or you do not have permission to view it.", p.peek())
	}
	p.i++
	desc := false
	if p.isWord("desc") || p.isWord("asc") {
		desc = p.isWord("desc")
		p.i++
	}
	return func(a, b *Issue) bool { return keyLess(a.Key, b.Key) != desc }, nil
}

func keyLess(a, b string) bool {
	pa, na, _ := strings.Cut(a, "-")
	pb, nb, _ := strings.Cut(b, "-")
	if pa != pb {
		return pa < pb
	}
	x, _ := strconv.Atoi(na)
	y, _ := strconv.Atoi(nb)
	return x < y
}
