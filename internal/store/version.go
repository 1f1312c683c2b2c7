package store

// SchemaVersion is the journal's schema version: the number of the last
// migration in migrations/, which Open records in PRAGMA user_version.
// Adding a migration bumps it (docs/formats.md).
const SchemaVersion = 7
