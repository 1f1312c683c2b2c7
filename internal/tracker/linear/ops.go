package linear

// The operations cadre sends, each named so that Linear's logs, and the
// fake in lineartest, can tell them apart. Connections ask for at most
// fifty nodes: Linear's complexity counts every node asked for, not only
// those returned.

var opIssue = operation{name: "CadreIssue", doc: `query CadreIssue($id: String!, $after: String) {
  issue(id: $id) {
    id identifier number title description url
    creator { name }
    team { key }
    labels(first: 50) { nodes { name } }
    comments(first: 50, after: $after) {
      nodes { id body createdAt user { name } botActor { name } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`}

var opIssues = operation{name: "CadreIssues", doc: `query CadreIssues($filter: IssueFilter!, $first: Int!, $after: String) {
  issues(filter: $filter, first: $first, after: $after) {
    nodes { identifier number title url creator { name } labels(first: 20) { nodes { name } } }
    pageInfo { hasNextPage endCursor }
  }
}`}

var opIssueStates = operation{name: "CadreIssueStates", doc: `query CadreIssueStates($id: String!) {
  issue(id: $id) {
    id identifier
    state { id name }
    team { key states(first: 50) { nodes { id name type position } } }
  }
}`}

var opAttachments = operation{name: "CadreAttachments", doc: `query CadreAttachments($id: String!, $url: String!) {
  issue(id: $id) {
    id identifier
    team { key }
    attachments(first: 1, filter: { url: { eq: $url } }) { nodes { id url } }
  }
}`}

var opCommentCreate = operation{write: true, name: "CadreCommentCreate", doc: `mutation CadreCommentCreate($input: CommentCreateInput!) {
  commentCreate(input: $input) { success comment { id } }
}`}

var opIssueUpdate = operation{write: true, name: "CadreIssueUpdate", doc: `mutation CadreIssueUpdate($id: String!, $input: IssueUpdateInput!) {
  issueUpdate(id: $id, input: $input) { success issue { id state { id name } } }
}`}

var opAttachmentCreate = operation{write: true, name: "CadreAttachmentCreate", doc: `mutation CadreAttachmentCreate($input: AttachmentCreateInput!) {
  attachmentCreate(input: $input) { success attachment { id url } }
}`}

// The shapes of the answers, as the selections above ask for them.

type named struct {
	Name string `json:"name"`
}

type pageInfo struct {
	HasNextPage bool   `json:"hasNextPage"`
	EndCursor   string `json:"endCursor"`
}

type labelNodes struct {
	Nodes []named `json:"nodes"`
}

type commentNode struct {
	ID        string `json:"id"`
	Body      string `json:"body"`
	CreatedAt string `json:"createdAt"`
	User      *named `json:"user"`
	BotActor  *named `json:"botActor"`
}

type issueNode struct {
	ID          string  `json:"id"`
	Identifier  string  `json:"identifier"`
	Number      float64 `json:"number"` // a Float in Linear's schema
	Title       string  `json:"title"`
	Description *string `json:"description"`
	URL         string  `json:"url"`
	Creator     *named  `json:"creator"`
	Team        struct {
		Key string `json:"key"`
	} `json:"team"`
	Labels   labelNodes `json:"labels"`
	Comments struct {
		Nodes    []commentNode `json:"nodes"`
		PageInfo pageInfo      `json:"pageInfo"`
	} `json:"comments"`
}

type stateNode struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

type issueStates struct {
	ID         string    `json:"id"`
	Identifier string    `json:"identifier"`
	State      stateNode `json:"state"`
	Team       struct {
		Key    string `json:"key"`
		States struct {
			Nodes []struct {
				stateNode
				Position float64 `json:"position"`
			} `json:"nodes"`
		} `json:"states"`
	} `json:"team"`
}

type issueAttachments struct {
	ID          string               `json:"id"`
	Identifier  string               `json:"identifier"`
	Team        struct{ Key string } `json:"team"`
	Attachments struct {
		Nodes []struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		} `json:"nodes"`
	} `json:"attachments"`
}
