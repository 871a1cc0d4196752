"""``vfl party``: a party's own service (``serve``) and a test deployment's certificates
(``certs``)."""

from __future__ import annotations

import click

from vfl.experiments.transport.service_grpc import run_party
from vfl.experiments.transport.service_tls import write_deployment

__all__ = ["party"]


@click.group()
def party():
    """Run one party as its own service, behind mutual TLS (README "Deploying parties")."""


@party.command()
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The party's PARTY.toml: the run's public config and its [party] table.",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where its dataset is [default: $VFL_DATA_DIR, else the user cache].",
)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a key.")
def serve(config_path, data_dir, overrides):
    """Serve one party until interrupted: its data, its limits, its ledger.

    \b
    vfl party serve --config party2.toml
    """
    run_party(config_path, data_dir, overrides, lambda line: click.echo(line, err=True))


@party.command()
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory for ca.pem, party-<m>.pem/.key and coordinator.pem/.key.",
)
@click.option("--parties", type=click.IntRange(min=1, max=64), required=True, help="How many parties.")
@click.option(
    "--days", type=click.IntRange(min=1), default=365, show_default=True, help="Validity of every certificate."
)
def certs(out, parties, days):
    """Create a CA and a certificate per party and for the coordinator (a test deployment).

    \b
    vfl party certs --out certs --parties 2
    """
    written = write_deployment(out, parties, days)
    click.echo(f"wrote {len(written)} files to {out}: " + ", ".join(written))
