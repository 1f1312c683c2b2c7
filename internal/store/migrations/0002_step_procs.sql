-- The process group of a step's running agent: its id (the leader's pid)
-- and the leader's start time in clock ticks after boot, so a resume can
-- kill an agent orphaned by a crash, and never a later process given the
-- same pid. Both are 0 when no agent process is running for the step.
ALTER TABLE steps ADD COLUMN pgid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN pgid_start INTEGER NOT NULL DEFAULT 0;
