"""``vfl party``: a party's own service (``serve``) and a test deployment's certificates
(``certs``)."""

from __future__ import annotations

import click

__all__ = ["party"]


@click.group()
def party():
    """Run one party as its own service, behind mutual TLS (README "Deploying parties")."""


@party.command()
@click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False),
              help="The party's PARTY.toml: the run's public config and its [party] table.")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Where its dataset is [default: $VFL_DATA_DIR, else the user cache].")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a key.")
def serve(config_path, data_dir, overrides):
    """Serve one party until interrupted: its data, its limits, its ledger.

    \b
    vfl party serve --config party2.toml
    """
    import logging
    import signal
    import threading
    from pathlib import Path

    from vfl.experiments.service_party import PartyService, read_party_config, serve as start

    pc, config = read_party_config(config_path, overrides)
    service = PartyService(pc, config, data_dir)
    Path(pc.directory).mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(Path(pc.directory) / "party.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log = logging.getLogger("vfl.party")
    log.addHandler(handler)
    log.addHandler(logging.StreamHandler())
    log.setLevel(logging.INFO)
    server = start(service)
    floor = "" if service.guard is None else f", noise floor {service.guard.floor:.6g} x sensitivity"
    click.echo(f"party {pc.index} serving {service.protocol.name} on {pc.listen} "
               f"({'plaintext' if pc.insecure else 'mutual TLS'}; {service.rows} rows, "
               f"{service.width} columns{floor}); its record: "
               f"{Path(pc.directory) / 'releases.jsonl'}", err=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    server.stop(grace=1.0).wait()


@party.command()
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Directory for ca.pem, party-<m>.pem/.key and coordinator.pem/.key.")
@click.option("--parties", type=click.IntRange(min=1, max=64), required=True,
              help="How many parties.")
@click.option("--days", type=click.IntRange(min=1), default=365, show_default=True,
              help="Validity of every certificate.")
def certs(out, parties, days):
    """Create a CA and a certificate per party and for the coordinator (a test deployment).

    \b
    vfl party certs --out certs --parties 2
    """
    from vfl.experiments.service_tls import write_deployment

    written = write_deployment(out, parties, days)
    click.echo(f"wrote {len(written)} files to {out}: " + ", ".join(written))
