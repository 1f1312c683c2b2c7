package config

import (
	"cmp"
	"fmt"
	"strings"
)

// The trackers cadre takes work items from (tracker.type).
const (
	TrackerJira   = "jira"
	TrackerLinear = "linear"
)

// Tracker configures the issue tracker: its kind and site, the project
// (Jira) or team (Linear) whose issues cadre works on, the statuses it
// moves them through, and which of them cadre watch takes up.
type Tracker struct {
	Type     string        `yaml:"type"`
	URL      string        `yaml:"url"`
	Project  string        `yaml:"project"`
	Team     string        `yaml:"team"`
	TokenEnv string        `yaml:"token_env"`
	States   TrackerStates `yaml:"states"`
	Watch    TrackerWatch  `yaml:"watch"`
}

// TrackerStates are the statuses an issue is moved to, by name: when its
// item starts, when its pull request opens, when that merges. An empty
// one leaves the status alone at that point.
type TrackerStates struct {
	Started string `yaml:"started"`
	Review  string `yaml:"review"`
	Done    string `yaml:"done"`
}

// TrackerWatch selects the tracker's issues cadre watch takes up: a JQL
// query (Jira), or labels and a status.
type TrackerWatch struct {
	JQL    string   `yaml:"jql"`
	Labels []string `yaml:"labels"`
	State  string   `yaml:"state"`
}

// Empty says whether the watch selects nothing by itself.
func (w TrackerWatch) Empty() bool { return w.JQL == "" && len(w.Labels) == 0 && w.State == "" }

// TokenVar is the variable the tracker's token is read from:
// tracker.token_env, else JIRA_API_TOKEN or LINEAR_API_KEY by type.
func (t Tracker) TokenVar() string {
	def := map[string]string{TrackerJira: "JIRA_API_TOKEN", TrackerLinear: "LINEAR_API_KEY"}[t.Type]
	return cmp.Or(strings.TrimSpace(t.TokenEnv), def)
}

// tracker checks that the tracker section names a kind and what that kind
// needs, and refuses the other kind's keys rather than ignore them.
func (l *loader) tracker(c *Config) error {
	t := c.Tracker
	if t.Type == "" {
		for _, k := range []struct{ key, v string }{{"url", t.URL}, {"project", t.Project}, {"team", t.Team}, {"token_env", t.TokenEnv},
			{"watch.jql", t.Watch.JQL}, {"watch.state", t.Watch.State}, {"watch.labels", strings.Join(t.Watch.Labels, ",")}} {
			if k.v != "" {
				return l.invalid("tracker."+k.key, "set tracker.type (jira or linear) for it to mean anything")
			}
		}
		return nil
	}
	switch {
	case t.Type == TrackerJira && t.URL == "":
		return l.invalid("tracker.type", "jira needs tracker.url, its site's address, e.g. https://acme.atlassian.net")
	case t.Type == TrackerJira && t.Project == "":
		return l.invalid("tracker.type", "jira needs tracker.project, the key of the project whose issues cadre works on, e.g. PROJ")
	case t.Type == TrackerJira && t.Team != "":
		return l.invalid("tracker.team", "is Linear's: on Jira set tracker.project")
	case t.Type == TrackerLinear && t.Team == "":
		return l.invalid("tracker.type", "linear needs tracker.team, the key of the team whose issues cadre works on, e.g. ENG")
	case t.Type == TrackerLinear && t.Project != "":
		return l.invalid("tracker.project", "is Jira's: on Linear set tracker.team")
	case t.Watch.JQL != "" && (len(t.Watch.Labels) > 0 || t.Watch.State != ""):
		return l.invalid("tracker.watch.jql", "set it alone: with a query, write the labels and status in it (labels = x AND status = \"To Do\")")
	case t.Type == TrackerLinear && t.Watch.JQL != "":
		return l.invalid("tracker.watch.jql", "is Jira's: on Linear use tracker.watch.labels and tracker.watch.state")
	}
	for i, label := range t.Watch.Labels {
		if strings.TrimSpace(label) == "" {
			return l.invalid(fmt.Sprintf("tracker.watch.labels[%d]", i), `want a label name, got ""`)
		}
	}
	return nil
}
