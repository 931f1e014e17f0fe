"""The workspace format: memories, frontmatter, ids, names, indexes and bounded reads of files."""
