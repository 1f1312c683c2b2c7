package agent

import "github.com/cadre-dev/cadre/internal/role"

// RoleInfo describes a built-in role: what it is for and what it produces.
type RoleInfo struct {
	Name        string
	Description string
	Output      string
}

// Roles lists the built-in roles, sorted by name: the names New takes
// (a role directory, WithRoleDir, may add or override some).
func Roles() []RoleInfo {
	reg, err := role.Load("")
	if err != nil {
		return nil // the built-ins are embedded and checked by the tests
	}
	var out []RoleInfo
	for _, r := range reg.List() {
		out = append(out, RoleInfo{Name: r.Name, Description: r.Description, Output: r.Output})
	}
	return out
}
