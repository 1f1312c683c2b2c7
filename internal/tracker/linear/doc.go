// Package linear is Linear as a work-item tracker (codehost.Tracker): its
// GraphQL API spoken over net/http and encoding/json, one team's issues in;
// comments, workflow states and pull-request links out.
//
// Every request is a named operation with variables (CadreIssue,
// CadreIssues, CadreIssueStates, CadreAttachments, CadreCommentCreate,
// CadreIssueUpdate, CadreAttachmentCreate), selecting only the fields cadre
// reads, connections at most fifty long, so each costs little of Linear's
// complexity budget.
//
// Rate limits: Linear answers a spent budget with HTTP 400 or 429 and a
// GraphQL error whose extensions.code is RATELIMITED, the budgets in
// X-RateLimit-Requests-* and X-RateLimit-Complexity-* headers (resets in
// milliseconds since the epoch). The Client waits for the reset of the
// spent budget, no longer than Options.MaxWait, a bounded number of times;
// a budget an answer reports spent holds every later call back until it
// resets, since calls made meanwhile only prolong the limit.
//
// Writes go one at a time, and each is idempotent, so a crash or a lost
// answer never repeats one:
//
//   - a comment is keyed twice over. Its id, which commentCreate lets a
//     client choose, is derived from the issue and the marker (a UUID of
//     version-4 form, as the API asks), so Linear itself refuses a second
//     comment of that id; and its last line is the marker in a code span,
//     `cadre:MARKER`. Linear keeps Markdown as a rich-text document and
//     writes it back out on read; raw HTML, an HTML comment included, is
//     not part of that document's schema and is not documented to survive
//     the round trip, while a code span is, character for character, and
//     renders as a small monospaced chip. Before posting, and again after
//     a failed post, the comments are searched for the id or the
//     marker. Comments carrying such a marker line are cadre's own and are
//     left out of the text Issue returns;
//   - a state is moved to only when the issue is not in it already;
//   - a link is an attachment, which Linear keys by URL within an issue
//     ("if another attachment is created with the same url value, the
//     existing record is updated instead"); the issue's attachments are
//     looked up by URL first all the same, so a second Link sends no
//     mutation. attachmentCreate is used rather than attachmentLinkURL:
//     its upsert by URL is documented and its title is the one given,
//     whatever integrations the workspace has.
//
// The token is masked, in every spelling internal/redact knows, in every
// error the Client returns and in all text it sends or hands back.
package linear
