-- A step is looked for by its id across runs (the pull request an earlier
-- run opened for an issue, before a new run takes it up): without this
-- index each look scans every step of the journal.
CREATE INDEX steps_id ON steps (id, status, seq);
