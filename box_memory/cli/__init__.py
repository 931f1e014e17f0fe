"""`box-memory`: the Typer command line, one module per command group (`app.py` wires them)."""
