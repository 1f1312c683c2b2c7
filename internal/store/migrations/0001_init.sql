-- Initial schema of the cadre journal.
--
-- Times are TEXT in a fixed-width UTC form (2006-01-02T15:04:05.000000000Z)
-- so they sort as strings and stay readable from the sqlite3 shell.
-- JSON columns are TEXT holding a JSON document, or NULL when absent.

CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    repo        TEXT NOT NULL DEFAULT '',
    workflow    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL,
    options     TEXT,
    pid         INTEGER NOT NULL DEFAULT 0,
    started_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    ended_at    TEXT
);
CREATE INDEX runs_started_at ON runs (started_at);

-- seq keeps insertion order; (run_id, id) is the item's identity.
CREATE TABLE items (
    seq           INTEGER PRIMARY KEY,
    run_id        TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    id            TEXT NOT NULL,
    source        TEXT NOT NULL DEFAULT '',
    ref           TEXT NOT NULL DEFAULT '',
    title         TEXT NOT NULL DEFAULT '',
    init_stage    TEXT NOT NULL DEFAULT '',
    init_attempts INTEGER NOT NULL DEFAULT 0,
    stage         TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    current_step  TEXT NOT NULL DEFAULT '',
    error         TEXT NOT NULL DEFAULT '',
    updated_at    TEXT NOT NULL,
    UNIQUE (run_id, id)
);

-- One row per step id; a retried step reuses its row and counts tries.
CREATE TABLE steps (
    seq                INTEGER PRIMARY KEY,
    run_id             TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    id                 TEXT NOT NULL,
    item_id            TEXT NOT NULL DEFAULT '',
    role               TEXT NOT NULL DEFAULT '',
    runner             TEXT NOT NULL DEFAULT '',
    model              TEXT NOT NULL DEFAULT '',
    kind               TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL,
    tries              INTEGER NOT NULL DEFAULT 1,
    exit_code          INTEGER NOT NULL DEFAULT 0,
    output_path        TEXT NOT NULL DEFAULT '',
    signal             TEXT,
    result             TEXT,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0,
    cost_estimated     INTEGER NOT NULL DEFAULT 0,
    error              TEXT NOT NULL DEFAULT '',
    started_at         TEXT NOT NULL,
    ended_at           TEXT,
    UNIQUE (run_id, id)
);

-- Usage of every finished try, so the money spent on a failed try still
-- counts after the step is retried and its row is overwritten.
CREATE TABLE step_usage (
    run_id             TEXT NOT NULL,
    step_id            TEXT NOT NULL,
    try                INTEGER NOT NULL,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0,
    cost_estimated     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, step_id, try),
    FOREIGN KEY (run_id, step_id) REFERENCES steps (run_id, id) ON DELETE CASCADE
);

-- AUTOINCREMENT so a sequence number is never reused: readers page through
-- events with "seq > last seen" and must not miss or repeat one.
CREATE TABLE events (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    time    TEXT NOT NULL,
    type    TEXT NOT NULL,
    item_id TEXT NOT NULL DEFAULT '',
    data    TEXT
);
CREATE INDEX events_run_seq ON events (run_id, seq);
