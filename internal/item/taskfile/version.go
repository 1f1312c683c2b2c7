package taskfile

// FrontmatterVersion is the version of the task file's frontmatter: its
// keys and the values they take (docs/formats.md). Bump it with any
// change to them.
const FrontmatterVersion = 1
