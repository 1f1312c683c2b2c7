-- The score store (docs/evaluation.md): every evaluation of an agent's work,
-- from real runs and from benchmarks, so `cadre scores` can show how each
-- runner and model does a role and the selector can pick by that record.
--
-- One row is one verdict on one step: a gatekeeper's checks, a judge's
-- scores, a reviewing role's rating of a worker step, the item's outcome,
-- whether its pull request was merged, or a benchmark case. role/runner/model are those of the evaluated step
-- (the worker), not of whoever evaluated it.
--
-- No foreign key to runs: bench rows carry their own run ids, and a
-- record of how well a model worked outlives the journal of the run.

CREATE TABLE evaluations (
    id            INTEGER PRIMARY KEY,
    created_at    TEXT NOT NULL,
    source        TEXT NOT NULL CHECK (source IN ('run', 'bench')),
    run_id        TEXT NOT NULL,
    item_id       TEXT NOT NULL DEFAULT '',
    step_id       TEXT NOT NULL,
    role          TEXT NOT NULL,
    runner        TEXT NOT NULL,
    model         TEXT NOT NULL DEFAULT '',
    kind          TEXT NOT NULL CHECK (kind IN ('gatekeeper', 'judge', 'review', 'outcome', 'merged', 'bench')),
    -- NULL when this kind gives no pass/fail verdict (e.g. a judge).
    passed        INTEGER CHECK (passed IN (0, 1)),
    -- Quality 0..1; NULL when this kind gives no score.
    score         REAL CHECK (score >= 0 AND score <= 1),
    -- JSON: the checks, the judge's per-criterion scores, reasoning.
    detail        TEXT,
    -- The evaluated step's usage, or NULL on rows that do not carry it: a
    -- step evaluated several ways carries its usage on one row only, so
    -- means are per step and sums count each step once.
    cost_usd      REAL,
    latency_ms    INTEGER,
    input_tokens  INTEGER,
    output_tokens INTEGER,
    -- A resumed run replays its steps; recording the same evaluation
    -- again must not count it twice. item_id is in the key so an item-level
    -- row (an outcome) needs no step of its own. run_id leads: the key then
    -- also serves a run's evaluations (cadre report), and a filter on the
    -- two-valued source is not tempted away from evaluations_stats.
    UNIQUE (run_id, item_id, step_id, kind, source)
);

-- Covers the aggregate of `cadre scores` and the selector: grouped by
-- (role, runner, model) in index order, filtered by source, every summed
-- column read from the index without touching the table.
CREATE INDEX evaluations_stats ON evaluations
    (role, runner, model, source, passed, score, cost_usd, latency_ms, input_tokens, output_tokens);
-- Recent evaluations, newest first.
CREATE INDEX evaluations_created ON evaluations (created_at);
