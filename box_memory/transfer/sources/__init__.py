"""The readers of `box-memory import`: one module per source format, each yielding `SourceItem`s.

`common` holds what they share (bounded safe reading, walking, titles, frontmatter), `exports`
the reading of export files, and `detect` which format a source is in and the reader for each.
"""
