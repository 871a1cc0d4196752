"""``vfl audit`` (a run's privacy claims tested, white-box) and ``vfl audits`` (every
audit under a directory as one table and figure)."""

from __future__ import annotations

import click

from vfl.experiments.audit import audit_config, audit_lines, audit_markdown, table_lines, write_audit
from vfl.experiments.audit_setup import audit_setup
from vfl.plots import draw_audit_table, plot_audit, save_figure

__all__ = ["audit", "audits"]


@click.command()
@click.argument("run_dir", required=False, type=click.Path(file_okay=False))
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Audit this config's mechanism instead of a run directory's.",
)
@click.option(
    "--runs",
    "K",
    type=click.IntRange(min=10),
    default=None,
    help="Independent noise draws per neighbouring pair and direction [default: the config's audit.runs, else 100].",
)
@click.option(
    "--confidence",
    type=click.FloatRange(0.5, 1.0, max_open=True),
    default=0.95,
    show_default=True,
    help="Level of the one-sided bounds on delta(eps).",
)
@click.option(
    "--kinds",
    type=click.Choice(["natural", "adversarial", "both"]),
    default="both",
    show_default=True,
    help="Which neighbouring pairs to audit.",
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the audit's own noise draws."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory for audit.csv, losses.csv and the figure [default: results/audits/NAME].",
)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override any config key.")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None)
@click.option(
    "--noise-scale",
    type=float,
    default=1.0,
    show_default=True,
    help="Multiply every noise scale of the audited runs by S (calibration only: the "
    "claims stay the accountant's, so with S = 0.33 a sound audit must refute; "
    "the guarantee is void for these runs).",
)
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option(
    "--bound",
    type=click.Choice(["auto", "gdp", "kl", "clopper-pearson", "truncated-kl"]),
    default="auto",
    show_default=True,
    help="gdp = each run's realised mu (Gaussian releases; Nasr et al. 2023); "
    "one-sided bounds on delta(eps): kl = Chernoff, clopper-pearson = exact "
    "binomial after randomized rounding, truncated-kl = kl of samples capped "
    "where the claimed profile puts almost none; auto = gdp for Gaussian "
    'releases, else per claim the bound with most power (README, "The '
    'audit").',
)
@click.option(
    "--sampler",
    type=click.Choice(["numpy", "exact"]),
    default="numpy",
    help="exact = the deployed sampler (exact discrete noise on its grid; ~100x slower).",
)
@click.option("--batch", type=click.IntRange(min=2), help="Runs pushed through together.")
def audit(
    run_dir,
    config_path,
    K,
    confidence,
    kinds,
    seed,
    out,
    overrides,
    data_dir,
    noise_scale,
    overwrite,
    bound,
    sampler,
    batch,
):
    """Audit a run's privacy claims (white-box): PASS or REFUTED.

    For neighbouring datasets of the run's stated relation, replays the
    mechanism with fresh noise, computes the exact privacy loss of each
    transcript, and tests every claimed (epsilon, delta): the guarantee and,
    where it has one, the paper's own claim.

    \b
    vfl audit --config papers/hu/configs/privacy-a9a.toml
    """
    if (run_dir is None) == (config_path is None):
        raise click.UsageError("give a RUN_DIR or --config (one of them)")
    config, final = audit_setup(run_dir, config_path, overrides, out, overwrite=overwrite)
    chosen = ("natural", "adversarial") if kinds == "both" else (kinds,)
    report = audit_config(
        config,
        data_dir=data_dir,
        K=K or config.audit.runs,
        confidence=confidence,
        seed=seed,
        kinds=chosen,
        on_progress=lambda msg: click.echo(msg, err=True),
        noise_scale=noise_scale,
        bound=bound,
        sampler=sampler,
        batch=batch,
    )
    written = write_audit(
        report,
        final,
        {"config": config.to_dict(), "seed": seed, "bound": bound},
        figure=lambda tmp: save_figure(plot_audit(report), tmp / "audit.png"),
    )
    for line in audit_lines(report):
        click.echo(line)
    click.echo(f"wrote {final}/audit.csv, losses.csv, audit.json, " + ", ".join(p.name for p in written))


@click.command()
@click.argument("root", type=click.Path(exists=True, file_okay=False), default="results/audits", required=False)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Figure path [default: ROOT/audits.png]; the table goes beside it as CSV.",
)
@click.option("--markdown", is_flag=True, help="Print the table as the manual shows it (docs/audit.md).")
def audits(root, out, markdown):
    """Collect every audit under ROOT into one table and one figure.

    One row per audit of a guarantee: the claimed epsilon, the empirical
    lower bound on epsilon with its level, the verdict, and the best pair's
    exercised / charged sensitivity. Audits run with --noise-scale are shown
    as calibrations beside the ones run as configured.

    \b
    vfl audit --config papers/hu/configs/privacy-a9a-row.toml --out results/audits/row
    vfl audit --config papers/hu/configs/privacy-a9a-row.toml --noise-scale 0.5 --out results/audits/row-0.5
    vfl audits results/audits
    """
    table, csv, written = draw_audit_table(root, out)
    if markdown:
        click.echo(audit_markdown(table), nl=False)
    click.echo("\n".join(table_lines(table)))
    click.echo(f"wrote {csv}, " + ", ".join(str(p) for p in written))
