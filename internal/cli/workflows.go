package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// NewCmdWorkflows builds cadre workflows list|show.
func NewCmdWorkflows(f *Factory) *cobra.Command {
	list := func(cmd *cobra.Command, args []string) error {
		flows, err := f.workflows(cmd.Context())
		if err != nil {
			return err
		}
		fmt.Fprintf(f.IO.Out, "%-10s %s\n", "runner", "The stage pipeline for task files: planner, coder, auditor by stage; the default for task files.")
		for _, name := range flows.Names() {
			d, _ := flows.Get(name)
			src := ""
			if d.Source != "built-in" {
				src = " [" + d.Source + "]"
			}
			fmt.Fprintf(f.IO.Out, "%-10s %s%s\n", name, d.Description, src)
		}
		return nil
	}
	cmd := &cobra.Command{
		Use:   "workflows [list|show NAME]",
		Short: "List workflows, or show one's phases and steps",
		Long: `Workflows are declarative graphs of steps over roles: phases (critical or not), loops with a
gate and a bound, fan-out over the plan's tasks, deterministic steps (checks, commit) and human
escalation. Built-in ones can be overridden, and new ones added, with .cadre/workflows/NAME.yaml.` + exitStatusSimple,
		Example: `  cadre workflows list
  cadre workflows show cadre`,
		Args: cobra.NoArgs,
		RunE: list,
	}
	cmd.AddCommand(&cobra.Command{Use: "list", Short: "List workflows", Args: cobra.NoArgs,
		Long: "List every workflow with its description." + exitStatusSimple, Example: "  cadre workflows list", RunE: list},
		&cobra.Command{Use: "show NAME", Short: "Show a workflow's phases and steps", Args: cobra.ExactArgs(1),
			Long: "Print a workflow's phases, steps, loops and gates." + exitStatusSimple, Example: "  cadre workflows show loop",
			RunE: func(cmd *cobra.Command, args []string) error {
				if args[0] == workflow.PipelineWorkflow {
					fmt.Fprintln(f.IO.Out, "runner (built-in): from plan: planner → coder → auditor; from code: coder → auditor; from audit: auditor.\n"+
						"Rating ≥ limits.audit_pass_rating completes the task; lower sends it back to the coder with the review;\n"+
						"limits.max_attempts failed audits stop the run with the task left in audit.\n"+
						"gates: the auditor rejects with a Rating below limits.audit_pass_rating, Result FAIL or INSUFFICIENT,\n"+
						"  or Verdict needs-fixes; rejected work is never committed.\n"+strings.TrimSuffix(escalationText, "\n"))
					return nil
				}
				flows, err := f.workflows(cmd.Context())
				if err != nil {
					return err
				}
				d, ok := flows.Get(args[0])
				if !ok {
					return usageErr(fmt.Errorf("unknown workflow %q (see cadre workflows list)", args[0]))
				}
				fmt.Fprint(f.IO.Out, describeWorkflow(d))
				return nil
			}})
	return cmd
}

// workflows loads the workflows of the repository around the current
// directory, or the built-ins outside one.
func (f *Factory) workflows(ctx context.Context) (*workflow.Registry, error) {
	root := ""
	if r, err := f.repoRoot(ctx); err == nil {
		root = r
	}
	roles, err := loadRolesAt(root)
	if err != nil {
		return nil, err
	}
	return loadWorkflows(root, roles)
}

// describeWorkflow renders a definition as an indented outline.
func describeWorkflow(d *workflow.Def) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)\n%s\n", d.Name, d.Source, d.Description)
	pass := "limits.audit_pass_rating"
	if d.PassRating > 0 {
		pass = fmt.Sprintf("%d (this workflow's pass_rating)", d.PassRating)
	}
	gates := d.Gates()
	if len(gates) == 0 {
		b.WriteString("\ngates: none (no reviewing role)\n")
	} else {
		fmt.Fprintf(&b, "\ngates: %s reject(s) the work with Result FAIL or INSUFFICIENT, Verdict needs-fixes,\n"+
			"  or a Rating below %s; inside a loop an agent's FAIL also ends the round.\n"+
			"  Rejected work is never committed and never opens a pull request.\n", strings.Join(gates, ", "), pass)
	}
	b.WriteString(escalationText)
	for i, p := range d.Phases {
		crit := "non-critical"
		if p.Critical {
			crit = "critical"
		}
		fmt.Fprintf(&b, "\nphase %d: %s (%s)\n", i+1, p.Name, crit)
		writeNodes(&b, p.Steps, "  ", false)
	}
	return b.String()
}

// escalationText is the human-escalation rule every workflow follows.
const escalationText = "escalation: an agent's Confidence below limits.escalate_below_confidence, Result\n" +
	"  CLARIFICATION_NEEDED (asked again with the answer) or Next: Human pauses the item for cadre approve.\n"

// writeNodes renders steps; inRound is set inside a loop's do, where a
// rejection or an agent's FAIL ends the round instead of the item.
func writeNodes(b *strings.Builder, nodes []workflow.Node, ind string, inRound bool) {
	for _, n := range nodes {
		switch {
		case n.Role != "" && workflow.IsReviewing(n.Role) && inRound:
			fmt.Fprintf(b, "%s- %s  [gate: a rejection ends the round]\n", ind, n.Role)
		case n.Role != "" && workflow.IsReviewing(n.Role):
			fmt.Fprintf(b, "%s- %s  [gate: a rejection fails the item]\n", ind, n.Role)
		case n.Role != "":
			fmt.Fprintf(b, "%s- %s\n", ind, n.Role)
		case len(n.Parallel) > 0:
			fmt.Fprintf(b, "%s- in parallel:\n", ind)
			writeNodes(b, n.Parallel, ind+"    ", inRound)
		case n.ForEach != "":
			fmt.Fprintf(b, "%s- for each task of the plan (dependency order, independent tasks in parallel):\n", ind)
			writeNodes(b, n.Do, ind+"    ", inRound)
		case n.Loop != nil:
			bound := "max " + n.Loop.Max + " rounds"
			if n.Loop.MaxBetween != "" {
				bound = "max " + n.Loop.MaxBetween + " fix rounds"
			}
			ex := "fail the item"
			switch n.Loop.Exhausted {
			case "continue":
				ex = "go on"
			case "incomplete":
				ex = "pause as incomplete for cadre approve: approve runs as many rounds again, reject ends the item"
			}
			fmt.Fprintf(b, "%s- loop until %s: %s (%s; then %s):\n", ind, n.Loop.Until, workflow.Gates[n.Loop.Until], bound, ex)
			writeNodes(b, n.Loop.Do, ind+"    ", true)
			if len(n.Loop.Between) > 0 {
				fmt.Fprintf(b, "%s  between rounds (with the rejection as their note):\n", ind)
				writeNodes(b, n.Loop.Between, ind+"    ", false)
			}
			if len(n.Loop.OnFail) > 0 {
				fmt.Fprintf(b, "%s  after a round a working role ended with FAIL (the next round reads what they found):\n", ind)
				writeNodes(b, n.Loop.OnFail, ind+"    ", false)
			}
			if n.Loop.Next == "route" {
				fmt.Fprintf(b, "%s  a passing round goes where its last agent's Next says: %s starts the next round on a new subordinate goal;\n"+
					"%s  otherwise (Done) the goal is met and waits for cadre approve (limits.approve_goal), reject --note sending the note to %s\n",
					ind, n.Loop.Do[0].Role, ind, n.Loop.Do[0].Role)
			}
		case n.Run == "gatekeeper":
			what := "fails the item"
			if inRound {
				what = "ends the round"
			}
			fmt.Fprintf(b, "%s- run gatekeeper (%s)  [gate: a failed check %s]\n", ind, workflow.Actions[n.Run], what)
		default:
			fmt.Fprintf(b, "%s- run %s (%s)\n", ind, n.Run, workflow.Actions[n.Run])
		}
	}
}

// ApproveOptions are the arguments of cadre approve.
type ApproveOptions struct {
	Run, Item string
	Reject    bool
	Note      string
}

// NewCmdApprove builds cadre approve.
func NewCmdApprove(f *Factory, runF func(context.Context, *Factory, *ApproveOptions) error) *cobra.Command {
	opts := &ApproveOptions{}
	cmd := &cobra.Command{
		Use:   "approve RUN ITEM [--reject] [--note TEXT]",
		Short: "Answer an item's escalation to a human",
		Long: `An item waits for a human when an agent reported low confidence, asked for clarification
(Result CLARIFICATION_NEEDED) or handed over to a human (Next: Human), and when a loop ran out of
rounds as incomplete. approve lets it go on: the note is handed to the next agent (after a
clarification, the same role is asked again with it; after incomplete, as many rounds run again);
--reject ends the item. Then continue the run with cadre resume; an item of a run on the
Temporal engine waits in its workflow, which the answer reaches as a signal: it goes on at once.` + exitStatusSimple,
		Example: `  cadre approve 20261122-101500-ab12 42 --note "use the v2 API"
  cadre approve 20261122-101500-ab12 42 --reject --note "wrong goal"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErr(fmt.Errorf("approve takes RUN and ITEM, got %d argument(s): cadre approve RUN ITEM [--reject] [--note TEXT] (cadre status lists the waiting items)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Run, opts.Item = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runApprove(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Reject, "reject", false, "reject: the item fails")
	cmd.Flags().StringVar(&opts.Note, "note", "", "feedback handed to the next agent")
	return cmd
}

func runApprove(ctx context.Context, f *Factory, opts *ApproveOptions) error {
	st, run, root, err := f.openRunAt(ctx, opts.Run)
	if err != nil {
		return err
	}
	defer st.Close()
	step, err := engine.Approve(ctx, st, run, opts.Item, !opts.Reject, opts.Note)
	if err != nil {
		return usageErr(err)
	}
	verb := "approved"
	if opts.Reject {
		verb = "rejected"
	}
	if strings.Contains(step, "/follow/") {
		// Asked by cadre watch about a pull request, not by a workflow:
		// a running watch wakes for it, however long its interval.
		wakeWatch(f, root)
		fmt.Fprintf(f.IO.ErrOut, "cadre: %s %s; cadre watch goes on with it at its next pass\n", verb, step)
		return nil
	}
	// A Temporal run's item waits in its workflow for the answer.
	if goes, err := f.signalApproval(ctx, st, run, opts.Item, step, !opts.Reject, opts.Note); err != nil {
		return err
	} else if goes {
		fmt.Fprintf(f.IO.ErrOut, "cadre: %s %s; its workflow goes on\n", verb, step)
		return nil
	}
	fmt.Fprintf(f.IO.ErrOut, "cadre: %s %s; continue with: cadre resume %s\n", verb, step, run)
	return nil
}
