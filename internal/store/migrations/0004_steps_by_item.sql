-- An item's steps are read on their own (its outcome, its baseline, a
-- question waiting for a human); without this index each read scans every
-- step of the run, which grows with the number of items.
CREATE INDEX steps_run_item ON steps (run_id, item_id, seq);
