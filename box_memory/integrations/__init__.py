"""Adapters that let other agent frameworks keep their memory in a box-memory workspace."""
