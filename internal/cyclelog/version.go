package cyclelog

// Version is the version of current_cycle.md's layout: its sections and
// headings (docs/formats.md). Bump it with any change to them.
const Version = 1
