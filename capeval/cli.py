"""The `capeval` command line.

Subcommands are resolved lazily from `COMMANDS` so that `capeval --help`,
`capeval validate` and `capeval run` never pay for importing the analysis
stack (polars, DuckDB, scipy, matplotlib). Each command lives in its own
module under `capeval/commands/`; those modules import heavy libraries only
inside the command function.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, NoReturn

from capeval.interrupt import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Terminated,
    interrupted_words,
    leave_interrupted,
    query_interrupted,
    raise_on_sigterm,
    terminated_words,
)

try:
    import click

    from capeval import __version__
except KeyboardInterrupt:
    # Ctrl-C before click is there to catch it (the console script imports
    # this module first): the same words and code as after, never a
    # traceback and exit 1 (the gate's "regressed").
    leave_interrupted(None)

# name -> "module:attribute". One line per command; the module is imported only
# when the command is invoked or its help is shown.
COMMANDS: dict[str, str] = {
    "init": "capeval.commands.init:init",
    "new": "capeval.commands.new:new",
    "run": "capeval.commands.run:run",
    "validate": "capeval.commands.validate:validate",
    "behaviors": "capeval.commands.behaviors:behaviors",
    "aggregate": "capeval.commands.aggregate:aggregate",
    "compare": "capeval.commands.compare:compare",
    "gate": "capeval.commands.gate:gate",
    "report": "capeval.commands.report:report",
    "merge": "capeval.commands.merge:merge",
    "baseline": "capeval.commands.baseline:baseline",
    "history": "capeval.commands.history:history",
    "query": "capeval.commands.query:query",
    "plot": "capeval.commands.plot:plot",
    "agents": "capeval.commands.agents:agents",
    "doctor": "capeval.commands.doctor:doctor",
    "paperclip": "capeval.commands.paperclip:paperclip",
    "view": "capeval.commands.view:view",
}


class InterruptibleGroup(click.Group):
    """A click group where Ctrl-C exits 130 and names the subcommand it stopped.

    Groups nested under `capeval` (`paperclip`, `baseline`, `agents`, `plot`)
    use it too, so `capeval paperclip live` stopped by Ctrl-C says so rather
    than naming only `capeval paperclip`.
    """

    # Ctrl-C anywhere click would catch it (parsing, importing a command, a
    # command without its own SIGINT handler) exits 130, the code a shell
    # gives an interrupted program. Click's own "Aborted!" exits 1, which
    # `capeval gate` and `capeval run` document as "regressed"/"some repeat
    # failed": an interrupted gate must never read as a verdict.
    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except KeyboardInterrupt:
            interrupted(None if parent is None else _subcommand_words(parent))

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            interrupted(_subcommand_words(ctx))
        except Terminated:
            click.echo(f"\n{terminated_words(_subcommand_words(ctx))}", err=True)
            raise click.exceptions.Exit(EXIT_TERMINATED) from None
        except Exception as exc:
            if not query_interrupted(exc):
                raise
            interrupted(_subcommand_words(ctx))


def _subcommand_words(ctx: click.Context) -> str | None:
    """The words after `capeval` of the command Ctrl-C stopped (None: none chosen yet)."""
    if ctx.invoked_subcommand is None:
        return None
    names: list[str] = []
    outer: click.Context | None = ctx
    while outer is not None and outer.parent is not None:
        names.append(outer.info_name or "")
        outer = outer.parent
    return " ".join([*reversed(names), ctx.invoked_subcommand])


class LazyGroup(InterruptibleGroup):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, _, attr = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return None  # command not built yet
            raise
        return getattr(module, attr)


def interrupted(command: str | None) -> NoReturn:
    """Say that SIGINT stopped `command` and exit 130 (raised as click's Exit)."""
    click.echo(f"\n{interrupted_words(command)}", err=True)
    raise click.exceptions.Exit(EXIT_INTERRUPTED)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="capeval")
def main() -> None:
    """Capability evals of coding agents: run, judge, explore."""


def entry() -> None:
    """The console script: `main` in a real process, where commands may exit promptly."""
    try:
        from capeval.commands import common

        common.PROMPT_EXIT = True
        raise_on_sigterm()
        # Result files may hold text no encoding can print (a lone surrogate
        # escape such as "\ud800" is valid JSON): print it escaped rather than
        # end a gate in a UnicodeEncodeError after the verdict was reached.
        for stream in (sys.stdout, sys.stderr):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="backslashreplace")
        main()
    except KeyboardInterrupt:  # before click's group could name the command
        leave_interrupted(None)


if __name__ == "__main__":  # pragma: no cover
    entry()
