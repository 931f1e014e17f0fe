"""Recall: the query, the search ladder, the local cache and its freshness, Box AI answers."""
