"""The ``vfl`` command line (presentation layer): one group whose commands are loaded
when called (click's lazily loaded subcommands), so ``vfl --help`` imports none of them.

Exit status: 0 on success; 2 with one ``error: ...`` line on stderr for bad
usage, config, partition, data or output location, always before any
computation where it can be checked (``vfl --debug ...`` adds the
traceback); 130 on Ctrl-C; 1 for an internal error (a bug: the traceback is
always shown). Library warnings are shown only for commands that succeed.
"""

from __future__ import annotations

import importlib
import sys
import traceback
import warnings

import click

from vfl.core.errors import VFLError
from vfl.experiments.transport.process import keep_freed_memory

__all__ = ["all_commands", "cli", "main"]

#: `vfl --help` lists the commands in these groups, in this order
SECTIONS = {
    "Run one experiment and look at it": ["run", "plot", "audit", "audits", "attack", "privacy"],
    "Sweeps and tuning": ["sweep", "sweep-noise", "tune"],
    "Reproduce the papers (Hu et al.; Huang et al.; Xiao et al.; private stacking)": ["reproduce", "references"],
    "Data and algorithms": ["datasets", "solvers"],
    "Deployment: each party its own service": ["party"],
}
#: each command's module (vfl.cli.<module>; the command is its attribute) and its short help,
#: shown without importing the module
COMMANDS = {
    "run": ("run_cmd", "Run one experiment and write its run directory."),
    "plot": ("plot_cmd", "Overlay runs: objective and test loss vs iteration or time."),
    "audit": ("audit_cmd", "Audit a run's privacy claims (white-box): PASS or REFUTED."),
    "audits": ("audit_cmd", "Collect every audit under ROOT into one table and one figure."),
    "attack": ("attack_cmd", "Attack a run's messages: AUC (95 % CI), its ceiling under DP, an..."),
    "privacy": ("privacy_cmd", "Epsilon of a Gaussian mechanism under every analysis, or sigma."),
    "sweep": ("sweep_cmd", "Sweep any config keys (cartesian grid) and seeds; aggregate, plot."),
    "sweep-noise": ("sweep_cmd", "Sweep noise levels (or target epsilons) and seeds; aggregate, plot."),
    "tune": ("tune_cmd", "Choose hyper-parameters and write the chosen config, which records..."),
    "reproduce": ("reproduce_cmd", "Redraw a paper's figures: vfl reproduce [PAPER [FIGURE]]."),
    "references": ("reproduce_cmd", "Check short runs against the committed reference curves."),
    "datasets": ("datasets_cmd", "List, download and verify the datasets; inspect your own data files."),
    "solvers": ("solvers_cmd", "List the registered algorithms, or one solver's config keys."),
    "party": ("party_cmd", "Run one party as its own service, behind mutual TLS (README..."),
}


def _print_version(ctx, _param, value) -> None:
    """``--version``, looked up only when asked for (``vfl --help`` stays fast)."""
    if not value or ctx.resilient_parsing:
        return
    from vfl.experiments.provenance import vfl_version  # lazy: start-up (package metadata, only for --version)

    click.echo(f"vfl, version {vfl_version()}")
    ctx.exit()


class _LazySections(click.Group):
    """A group whose commands are imported when called (click's "Lazily Loading
    Subcommands") and whose help lists them by purpose (:data:`SECTIONS`)."""

    def list_commands(self, ctx):
        return [name for names in SECTIONS.values() for name in names]

    def get_command(self, ctx, cmd_name):
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(f"vfl.cli.{COMMANDS[cmd_name][0]}")
        return getattr(module, cmd_name.replace("-", "_"))

    def format_commands(self, ctx, formatter):
        for title, names in SECTIONS.items():
            with formatter.section(title):
                formatter.write_dl([(name, COMMANDS[name][1]) for name in names])


@click.group(cls=_LazySections, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for user errors too.")
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.pass_context
def cli(ctx, debug):
    """Private learning over distributed data: run, audit, sweep and reproduce.

    Parties holding different columns of the same rows (vertical), providers
    holding different rows around a trainer (horizontal), or agents on a
    graph (network) train one model together, with or without differential
    privacy. Start with

    \b
        vfl run --config configs/a9a.toml
        vfl solvers
    """
    ctx.obj = {"debug": debug}


def all_commands() -> dict[str, click.Command]:
    """Every command of ``vfl`` by name (each loaded), the unlisted ones too."""
    return {name: cli.get_command(None, name) for name in COMMANDS}


def main(argv=None) -> int:
    """Console entry point: turns user errors into one line and exit 2.

    Warnings raised by libraries are held back and shown only when the
    command succeeds: a run that ends in a clean error prints that line alone.
    """
    keep_freed_memory()  # large freed blocks reused, not unmapped (see its module)
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            code = cli.main(args=argv, prog_name="vfl", standalone_mode=False)
        except VFLError as exc:
            if debug:
                traceback.print_exc()
            click.echo(f"error: {' '.join(str(exc).split())}", err=True)
            return 2
        except click.exceptions.Abort:
            click.echo("aborted", err=True)
            return 130
        except click.exceptions.Exit as exc:
            return exc.exit_code
        except click.ClickException as exc:
            hint = ""
            if isinstance(exc, click.UsageError) and exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            click.echo(f"error: {exc.format_message()}{hint}", err=True)
            return exc.exit_code
    for w in caught:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
