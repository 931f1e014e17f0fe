"""Helpers more than one test folder uses: bounded child processes, a user without privileges, a
spawned HTTP server's port, memory ids. A helper used by one folder stays in that folder."""
