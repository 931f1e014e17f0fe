"""auth login|token|status|logout: Box OAuth for the cloud backend. Tokens are never printed.

`auth token` takes an existing access token from stdin (`--token-stdin`, or whenever stdin is not
a terminal) or from a hidden prompt, never from the command line, where it would land in shell
history and process listings.
"""

import sys
from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, opts
from box_memory.cli.output import Outcome, escape, run
from box_memory.result import Result

auth_app = typer.Typer(
    name="auth",
    help="Box sign-in for the cloud backend: login (OAuth + PKCE), token, status, logout.",
    no_args_is_help=True,
    add_completion=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(auth_app, name="auth")


def _status_lines(st: dict[str, Any]) -> list[str]:
    if not st.get("logged_in"):
        return [
            "Not logged in to Box: run `box-memory auth login` (or `box-memory auth token`), "
            "or set BOX_ACCESS_TOKEN"
        ]
    if st.get("source") == "env":
        return ["Logged in to Box with the access token in BOX_ACCESS_TOKEN (it is not refreshed)"]
    if st.get("store") == "keychain":
        where = f"the system keychain: {escape(str(st.get('keychain')))}"
    else:
        where = f"{escape(str(st.get('credentials_file')))}, mode 0600; no system keychain here"
    lines = [f"Logged in to Box (credentials in {where})"]
    if st.get("expires_at"):
        state = "expired" if st.get("expired") else "valid"
        lines.append(f"  access token {state} until {st['expires_at']}")
    lines.append(f"  refresh token: {'yes' if st.get('has_refresh') else 'no (it cannot be renewed)'}")
    if st.get("scopes"):
        lines.append(f"  scopes: {' '.join(st['scopes'])}")
    return lines


@auth_app.command("login")
def login_cmd(
    client_id: Annotated[
        str | None, typer.Option("--client-id", help="Box app client id (or BOX_CLIENT_ID).")
    ] = None,
    client_secret: Annotated[
        str | None,
        typer.Option("--client-secret", help="Box app client secret (prefer BOX_CLIENT_SECRET)."),
    ] = None,
    port: Annotated[
        int, typer.Option("--port", help="Loopback port of the redirect URI registered for the app.")
    ] = 18765,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the sign-in URL instead of opening a browser.")
    ] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the sign-in.")] = 300.0,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            help="Also ask for this Box scope (e.g. docgen.readwrite; repeatable). "
            "Stored with the credentials and shown by `auth status`.",
        ),
    ] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Sign in to Box in the browser (OAuth 2.0 with PKCE on a loopback redirect)."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        import re

        from box_memory import settings
        from box_memory.box import oauth
        from box_memory.errors import InvalidInput
        from box_memory.params import seconds

        seconds("--timeout", timeout)
        wanted = oauth.DEFAULT_SCOPES.split()
        for raw in scope or []:
            for name in raw.replace(",", " ").split():
                # Box scope names: lowercase words joined by . or _ (root_readwrite, docgen.readwrite).
                if not re.fullmatch(r"[a-z][a-z0-9_.:-]{0,63}", name):
                    raise InvalidInput(f"--scope {name!r} is not a Box scope name (e.g. docgen.readwrite)")
                if name not in wanted:
                    wanted.append(name)

        secret = client_secret
        if secret is None and not settings.client_secret() and sys.stdin.isatty():
            secret = typer.prompt("Box app client secret", hide_input=True, err=True).strip() or None

        def show(url: str) -> None:
            # The URL carries no secret (PKCE challenge and state only): safe on stderr.
            sys.stderr.write(f"Open this URL to sign in to Box:\n{url}\n")
            sys.stderr.flush()

        status = oauth.login(
            client_id,
            secret,
            port=port,
            scopes=" ".join(wanted),
            open_browser=not no_browser,
            timeout=timeout,
            on_url=show,
        )
        res = oauth.login_result(status, secret_on_command_line=client_secret is not None)
        return Outcome(res, ["Signed in to Box.", *_status_lines(res.data)[1:]])

    run("auth login", o, go)


def _read_token(token_stdin: bool) -> str:
    from box_memory.errors import InvalidInput

    if token_stdin or not sys.stdin.isatty():
        buf = getattr(sys.stdin, "buffer", None)
        data = buf.read(8192) if buf is not None else sys.stdin.read(8192).encode("utf-8", "surrogateescape")
        token = data.decode("ascii", "replace").strip()  # a non-ASCII byte fails the check below
    else:
        token = typer.prompt("Box access token", hide_input=True, err=True).strip()
    if not token:
        raise InvalidInput("no access token given on stdin")
    if not token.isascii() or not token.isprintable() or " " in token:
        raise InvalidInput("the access token must be printable ASCII with no spaces (as Box issues them)")
    return token


@auth_app.command("token")
def token_cmd(
    stray: Annotated[str | None, typer.Argument(hidden=True, show_default=False)] = None,
    token_stdin: Annotated[
        bool, typer.Option("--token-stdin", help="Read the access token from stdin (one line).")
    ] = False,
    expires_in: Annotated[
        float | None, typer.Option("--expires-in", help="Seconds the token stays valid (if known).")
    ] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Store an existing Box access token (from stdin or a hidden prompt; never an argument)."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.box import oauth
        from box_memory.errors import InvalidInput

        if stray is not None:
            # Never echo it back: a token on the command line is already in the shell history.
            raise InvalidInput(
                "pass the token on stdin (`--token-stdin`) or at the prompt, never as an argument; "
                "if that was a real token, revoke it in Box"
            )
        if expires_in is not None and not (0 < expires_in <= 10 * 365 * 86400):
            from box_memory.errors import InvalidInput

            raise InvalidInput(f"--expires-in must be a number of seconds above 0, got {expires_in:g}")
        st = oauth.store_token(_read_token(token_stdin), expires_in=expires_in).to_dict()
        return Outcome(Result(st), ["Stored the Box access token (it cannot be refreshed; it just expires)."])

    run("auth token", o, go)


@auth_app.command("status")
def status_cmd(json_: JsonOpt = False, quiet: QuietOpt = False, verbose: VerboseOpt = False) -> None:
    """Who provides the Box token and until when (never the token itself)."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.box import credentials

        st = credentials.status().to_dict()
        return Outcome(Result(st), _status_lines(st))

    run("auth status", o, go)


@auth_app.command("logout")
def logout_cmd(
    no_revoke: Annotated[
        bool, typer.Option("--no-revoke", help="Only delete the local credentials; do not revoke at Box.")
    ] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Revoke the tokens at Box (best effort) and delete the local credentials."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.box import oauth

        res = oauth.logout(revoke=not no_revoke)
        line = "Logged out of Box." if res.removed else "No stored Box credentials to remove."
        if res.revoked:
            line += f" Revoked: {', '.join(r.replace('_', ' ') for r in res.revoked)}."
        return Outcome(res.result, [line])

    run("auth logout", o, go)
