-- Only completed steps are looked for by id across runs: an index of
-- those alone is written once per step, when it completes, instead of at
-- its start and at every change of its status.
DROP INDEX steps_id;
CREATE INDEX steps_completed_id ON steps (id, seq) WHERE status = 'completed';
