-- A run on Temporal whose items run on workers of other machines: the
-- journal of the machine that started the run is the journal of truth; a
-- worker keeps a replica, hydrated with an item before its steps, and
-- sends back what each step changed as a numbered batch (see replica.go).

-- The batches of an item the journal of truth has applied, so a batch
-- applied again (an activity retried after it applied) changes nothing,
-- and one with the same number but other content (from a replica that
-- missed later batches) is refused. digest is the batch's SHA-256.
CREATE TABLE batches (
    run_id     TEXT NOT NULL,
    item_id    TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    digest     TEXT NOT NULL,
    applied_at TEXT NOT NULL,
    PRIMARY KEY (run_id, item_id, seq)
);

-- On a replica: the number of the item's batches its copy of the item
-- reflects (those of the snapshot it was hydrated from, then its own).
CREATE TABLE replica_items (
    run_id  TEXT NOT NULL,
    item_id TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    PRIMARY KEY (run_id, item_id)
);

-- On a replica: what the run spent that the replica holds no step_usage
-- rows for (other items, other workers), as of its latest snapshot, so
-- its totals (and the budget checks reading them) count the whole run.
CREATE TABLE replica_usage (
    run_id             TEXT PRIMARY KEY,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0,
    cost_estimated     INTEGER NOT NULL DEFAULT 0
);
