"""Moving memories in and out: `import` from other tools, `export` to JSONL or a zip."""
