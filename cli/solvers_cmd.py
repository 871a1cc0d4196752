"""``vfl solvers``: the registered algorithms, or one solver's config keys."""

from __future__ import annotations

import click

from vfl.experiments.registry import solver_help, solver_listing

__all__ = ["solvers"]


@click.command()
@click.argument("name", required=False)
def solvers(name):
    """List the registered algorithms, or one solver's config keys.

    \b
    vfl solvers dp_admm
    """
    click.echo("\n".join(solver_listing() if name is None else solver_help(name)))
