"""Helpers more than one test folder uses: bounded child processes, a user without privileges, a
spawned HTTP server's port, memory ids, the packages a CLI run imports. A helper used by one
folder stays in that folder's helpers.py or conftest.py."""
