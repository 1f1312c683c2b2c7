package lineartest

import (
	"fmt"
	"slices"
	"strings"
)

// matchIssue evaluates an IssueFilter on in. It knows the filters on team,
// state and labels, and and / or; any other field is refused, so a client
// asking for what the fake cannot judge finds out.
func matchIssue(in *issue, f map[string]any) (bool, string) {
	for k, v := range f {
		var (
			ok  bool
			bad string
		)
		switch k {
		case "team":
			ok, bad = matchFields(v, "TeamFilter", map[string]string{"key": in.team.key, "name": in.team.key, "id": in.team.id})
		case "state":
			ok, bad = matchFields(v, "WorkflowStateFilter", map[string]string{"name": in.state.name, "type": in.state.typ, "id": in.state.id})
		case "labels":
			ok, bad = matchLabels(in.labels, v)
		case "and", "or":
			ok, bad = matchList(in, k, v)
		default:
			return false, fmt.Sprintf(`Field "%s" is not defined by type "IssueFilter" (in lineartest).`, k)
		}
		if bad != "" || !ok {
			return false, bad
		}
	}
	return true, ""
}

func matchList(in *issue, op string, v any) (bool, string) {
	list, ok := v.([]any)
	if !ok {
		return false, op + " must be a list of IssueFilter"
	}
	for _, e := range list {
		f, ok := e.(map[string]any)
		if !ok {
			return false, op + " must be a list of IssueFilter"
		}
		hit, bad := matchIssue(in, f)
		switch {
		case bad != "":
			return false, bad
		case op == "and" && !hit:
			return false, ""
		case op == "or" && hit:
			return true, ""
		}
	}
	return op == "and", ""
}

// matchFields evaluates a filter of string fields (a TeamFilter, a
// WorkflowStateFilter) on the values fields has.
func matchFields(v any, typ string, fields map[string]string) (bool, string) {
	f, ok := v.(map[string]any)
	if !ok {
		return false, typ + " must be an object"
	}
	for k, cmp := range f {
		value, known := fields[k]
		if !known {
			return false, fmt.Sprintf(`Field "%s" is not defined by type "%s" (in lineartest).`, k, typ)
		}
		ok, bad := compare(value, cmp)
		if bad != "" || !ok {
			return false, bad
		}
	}
	return true, ""
}

// matchLabels evaluates an IssueLabelCollectionFilter: some or every
// label's name.
func matchLabels(labels []string, v any) (bool, string) {
	f, ok := v.(map[string]any)
	if !ok {
		return false, "IssueLabelCollectionFilter must be an object"
	}
	for k, sub := range f {
		if k != "some" && k != "every" {
			return false, fmt.Sprintf(`Field "%s" is not defined by type "IssueLabelCollectionFilter" (in lineartest).`, k)
		}
		hits := 0
		for _, l := range labels {
			ok, bad := matchFields(sub, "IssueLabelFilter", map[string]string{"name": l})
			if bad != "" {
				return false, bad
			}
			if ok {
				hits++
			}
		}
		if (k == "some" && hits == 0) || (k == "every" && hits != len(labels)) {
			return false, ""
		}
	}
	return true, ""
}

// compare evaluates a StringComparator on value.
func compare(value string, v any) (bool, string) {
	cmp, ok := v.(map[string]any)
	if !ok {
		return false, "StringComparator must be an object"
	}
	for op, arg := range cmp {
		var hit bool
		switch op {
		case "eq", "neq", "eqIgnoreCase", "neqIgnoreCase":
			s, _ := arg.(string)
			hit = value == s
			if strings.HasSuffix(op, "IgnoreCase") {
				hit = strings.EqualFold(value, s)
			}
			if strings.HasPrefix(op, "neq") {
				hit = !hit
			}
		case "in", "nin":
			list, _ := arg.([]any)
			hit = slices.Contains(list, any(value))
			if op == "nin" {
				hit = !hit
			}
		default:
			return false, fmt.Sprintf(`Field "%s" is not defined by type "StringComparator" (in lineartest).`, op)
		}
		if !hit {
			return false, ""
		}
	}
	return true, ""
}
