"""Hostile input, the rows of a data owner's commands: datasets split, tune, attack, party."""

from __future__ import annotations

from hostile_fixtures import A9A, DP_ADMM

OWNERS = [
    # vfl datasets split: a file or a config's data as party files
    (
        "split-file-and-config",
        ["datasets", "split", "data.csv", "--config", A9A, "--out", "o"],
        "give a FILE to split or --config CONFIG, one of them",
    ),
    ("split-no-label", ["datasets", "split", "data.csv", "--out", "o"], "needs --label COLUMN"),
    (
        "split-label-of-libsvm",
        ["datasets", "split", "data.libsvm", "--label", "y", "--out", "o"],
        "--label applies to CSV files",
    ),
    (
        "split-label-not-a-column",
        ["datasets", "split", "data.csv", "--label", "zz", "--out", "o"],
        "label column 'zz' not found",
    ),
    (
        "split-parties-one",
        ["datasets", "split", "data.csv", "--label", "y", "--parties", "1", "--out", "o"],
        "'--parties': 1 is not in the range",
    ),
    (
        "split-more-parties-than-columns",
        ["datasets", "split", "data.csv", "--label", "y", "--parties", "4", "--out", "o"],
        "cannot split 3 column(s) among 4 parties",
    ),
    (
        "split-overlap-zero",
        ["datasets", "split", "data.csv", "--label", "y", "--overlap", "0", "--out", "o"],
        "'--overlap': 0.0 is not in the range",
    ),
    (
        "split-seed-negative",
        ["datasets", "split", "data.csv", "--label", "y", "--seed", "-1", "--out", "o"],
        "'--seed': -1 is not in the range",
    ),
    (
        "split-test-missing",
        ["datasets", "split", "data.csv", "--label", "y", "--test", "nope.csv", "--out", "o"],
        "nope.csv: no such file",
    ),
    (
        "split-test-with-config",
        ["datasets", "split", "--config", "small.toml", "--test", "data.csv", "--out", "o"],
        "--label, --test and --parties describe",
    ),
    (
        "split-set-without-config",
        ["datasets", "split", "data.csv", "--label", "y", "--set", "run.seed=1", "--out", "o"],
        "--set applies with --config",
    ),
    (
        "split-set-bad-key",
        ["datasets", "split", "--config", "small.toml", "--set", "solver.x=1", "--out", "o"],
        "unknown key 'solver.x'",
    ),
    (
        "split-out-exists",
        ["datasets", "split", "data.csv", "--label", "y", "--out", "full"],
        "full exists; pass --overwrite",
    ),
    ("split-horizontal-config", ["datasets", "split", "--config", DP_ADMM, "--out", "o"], "party files hold columns"),
    (
        "split-data-dir-is-a-file",
        ["datasets", "split", "--config", A9A, "--data-dir", "afile", "--out", "o"],
        "'afile' is a file",
    ),
    # vfl tune
    (
        "tune-no-public-rows",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=1,2", "--out", "t.toml"],
        "set partition.public",
    ),
    (
        "tune-grid-bad-key",
        ["tune", "--config", "small.toml", "--grid", "solver.bogus=1", "--out", "t.toml"],
        "unknown key 'solver.bogus'",
    ),
    (
        "tune-grid-no-values",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=", "--out", "t.toml"],
        "--grid solver.rho has no values",
    ),
    (
        "tune-out-not-toml",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=1", "--out", "t.txt"],
        "name it *.toml",
    ),
    (
        "tune-seeds-zero",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=1", "--seeds", "0"],
        "'--seeds': 0 is not in the range",
    ),
    (
        "tune-trials-one",
        ["tune", "--config", "priv.toml", "--grid", "solver.rho=1", "--private", "--trials", "1"],
        "'--trials': 1.0 is not in the range",
    ),
    (
        "tune-private-without-guarantee",
        [
            "tune",
            "--config",
            "small.toml",
            "--set",
            "partition.public=5",
            "--grid",
            "solver.rho=1",
            "--private",
            "--out",
            "t.toml",
        ],
        "the config claims no guarantee",
    ),
    (
        "tune-data-dir-is-a-file",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=1", "--data-dir", "afile"],
        "'afile' is a file",
    ),
    # vfl attack
    (
        "attack-config-missing",
        ["attack", "--config", "nope.toml", "--attack", "label-norm"],
        "config file not found: nope.toml",
    ),
    ("attack-unknown", ["attack", "--config", "small.toml", "--attack", "bogus"], "'bogus' is not one of"),
    (
        "attack-too-few-known",
        ["attack", "--config", "small.toml", "--attack", "model-completion", "--known", "3"],
        "model-completion needs at least 10 known labels",
    ),
    (
        "attack-party-one",
        ["attack", "--config", "small.toml", "--attack", "label-norm", "--party", "1"],
        "--party 1: the passive parties are 2..M",
    ),
    (
        "attack-not-defined",
        ["attack", "--config", DP_ADMM, "--attack", "label-norm"],
        "attack label-norm is not defined for dp_admm (defined: none)",
    ),
    (
        "attack-data-dir-is-a-file",
        ["attack", "--config", "small.toml", "--attack", "label-norm", "--data-dir", "afile"],
        "'afile' is a file",
    ),
    ("attack-run-dir-missing", ["attack", "nope", "--attack", "label-norm"], "nope: no such run directory"),
    (
        "attack-run-dir-and-config",
        ["attack", "nope", "--config", "small.toml", "--attack", "label-norm"],
        "or --config (run here), not both",
    ),
    (
        "run-record-received-not-vertical",
        ["run", "--config", DP_ADMM, "--record-received"],
        "--record-received: dp_admm is not a vertical solver",
    ),
    # vfl party
    ("party-serve-no-party-table", ["party", "serve", "--config", "small.toml"], "needs a [party] table"),
    (
        "party-serve-bad-index",
        ["party", "serve", "--config", "small.toml", "--set", "party.index=0"],
        "party.index must be the party's number",
    ),
    (
        "party-serve-plaintext-off-loopback",
        [
            "party",
            "serve",
            "--config",
            "small.toml",
            "--set",
            "party.index=1",
            "--set",
            "party.insecure=true",
            "--set",
            'party.listen="10.1.1.1:5"',
        ],
        "allowed on a loopback address only",
    ),
    (
        "party-serve-data-dir-is-a-file",
        ["party", "serve", "--config", "small.toml", "--data-dir", "afile"],
        "'afile' is a file",
    ),
    (
        "party-certs-no-parties",
        ["party", "certs", "--out", "o", "--parties", "0"],
        "'--parties': 0 is not in the range",
    ),
    (
        "party-certs-zero-days",
        ["party", "certs", "--out", "o", "--parties", "1", "--days", "0"],
        "'--days': 0 is not in the range",
    ),
]
