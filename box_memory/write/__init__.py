"""The write path: memories and companions checked once, then committed under one lock."""
