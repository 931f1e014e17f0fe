"""mcp-check: is the Box MCP server reachable, does it accept our token, has it our tools?

PASS (every tool box-memory uses), DEGRADED (required tools present, some optional ones missing:
box-memory works without them), INCOMPATIBLE (unreachable, auth refused or a required tool
missing: exit 4).
"""

from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, opts
from box_memory.cli.output import Outcome, escape, run


def register(app: typer.Typer) -> None:
    app.command("mcp-check")(mcp_check_cmd)


def _lines(r: dict[str, Any]) -> list[str]:
    colour = {"PASS": "green", "DEGRADED": "yellow"}.get(r["verdict"], "red")
    lines = [f"[{colour}]{r['verdict']}[/{colour}] Box MCP server at {escape(r['url'])}"]
    lines.append(
        f"  reachable: {'yes' if r['reachable'] else 'no'}; auth: {'ok' if r['auth_ok'] else 'failed'}"
    )
    if r["reachable"] and r["auth_ok"]:
        lines.append(
            f"  tools: {r['tool_count']} offered; required {len(r['required_present'])}/"
            f"{len(r['required_present']) + len(r['required_missing'])} present"
        )
        if r["required_missing"]:
            lines.append(f"  missing (required): {', '.join(r['required_missing'])}")
        if r["optional_missing"]:
            lines.append(f"  missing (optional): {', '.join(r['optional_missing'])}")
        user = r.get("user") or {}
        if user.get("login") or user.get("name"):
            who = f"{user.get('name') or ''} {user.get('login') or ''}".strip()
            lines.append(f"  signed in as: {escape(who)}")
    for f in r.get("features") or []:
        colour = {"PASS": "green", "DEGRADED": "yellow"}.get(f["verdict"], "red")
        line = f"  [{colour}]{f['verdict']}[/{colour}] {escape(f['feature'])}"
        if f.get("problem"):
            line += f": {escape(f['problem'])}" + (
                f" - lost: {escape(f['lost'])}" if f["verdict"] == "DEGRADED" else ""
            )
        lines.append(line)
    wt = r.get("write_test")
    if wt:
        for s in wt["steps"]:
            mark = "ok" if s["ok"] else f"FAILED: {escape(s.get('error') or '')}"
            lines.append(f"  write test - {escape(s['step'])}: {mark} ({s['ms']} ms)")
    if r.get("error"):
        lines.append(f"  {escape(r['error'])}")
    return lines


def mcp_check_cmd(
    url: Annotated[
        str | None,
        typer.Option("--url", help="MCP endpoint (default: BOX_MCP_URL, else https://mcp.box.com/)."),
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per request.")] = 15.0,
    deep: Annotated[
        bool,
        typer.Option("--deep", help="Check every tool and argument box-memory uses, per feature."),
    ] = False,
    write_test: Annotated[
        str | None,
        typer.Option(
            "--write-test",
            metavar="FOLDER_ID",
            help="With --deep: a write round trip in a scratch folder created in this Box folder.",
        ),
    ] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Check the Box MCP connection: PASS / DEGRADED / INCOMPATIBLE (exit 4)."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.params import seconds

        seconds("--timeout", timeout, most=3600)
        if write_test is not None and not (write_test.strip().isascii() and write_test.strip().isdigit()):
            from box_memory.errors import InvalidInput

            raise InvalidInput(f"--write-test needs a Box folder id (digits), not {write_test!r}")
        from box_memory.box.auth import TokenSource

        tokens = TokenSource()
        if tokens.source == "none":
            # No credentials at all: say so before loading the network stack (over a second).
            from box_memory.errors import AuthError

            try:
                tokens.access_token()
            except AuthError as e:
                raise AuthError(f"INCOMPATIBLE: {e}", code=e.code) from None
        from box_memory.box.transport import default_url
        from box_memory.maintenance.mcp_check import mcp_check

        report = mcp_check(
            url or default_url(),
            tokens,
            timeout=timeout,
            deep=deep or bool(write_test),
            write_test=write_test.strip() if write_test else None,
        ).to_dict()
        from box_memory.maintenance.mcp_check import check_result

        result = check_result(report)
        if result.errors and not (report["reachable"] and report["auth_ok"]) and not o.json:
            # Unreachable or refused: one clear line on stderr, like every other command.
            from box_memory.errors import BackendUnavailable

            err = result.errors[0]
            raise BackendUnavailable(err["message"], code=err["code"])
        return Outcome(result, _lines(report))

    run("mcp-check", o, go)
