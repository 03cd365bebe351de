"""Curves under a prior: both sides of the trade-off, the expected-objective OPTMech, the CLI."""

import json

import numpy as np
import pandas as pd
import pytest

import mdp
from mdp.cli.main import main
from mdp.curves.loss import loss_curves
from mdp.prior import Prior


def _run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def city():
    rng = np.random.default_rng(8)
    pts = np.c_[48.20 + rng.random(14) * 0.03, 16.35 + rng.random(14) * 0.04]
    return mdp.MetricSpace.from_points(pts, metric="haversine")


def test_curves_under_a_prior_carry_both_sides_and_the_expected_optimum(city):
    prior = Prior.from_counts(np.random.default_rng(1).integers(0, 40, city.n))
    df = loss_curves(city, ["optimal", "exponential", "planar_laplace"], [1.5, 4.0], delta=0.0,
                     progress=False, prior=prior)
    assert "optimal[expected]" in set(df.mechanism)
    rows = df[~df.mechanism.isin(["lower_bound"])]
    assert (rows.adversary_error <= rows.expected_loss + 1e-12).all()
    assert (rows.remap_expected_loss <= rows.expected_loss + 1e-12).all()
    # the remap's loss is the attacker's error on the mechanism it remaps
    fam = rows[rows.mechanism != "uniform"]
    assert np.allclose(fam.remap_expected_loss, fam.adversary_error, rtol=1e-9)
    # at equal pure eps_tight the expected optimum loses least under its prior
    for t, g in fam.groupby("target_eps_tight"):
        best = g[g.mechanism == "optimal[expected]"].expected_loss.iloc[0]
        assert (best <= g.expected_loss * (1 + 2e-3)).all(), t


def test_cli_curves_with_a_counts_prior_and_the_adversary_axis(tmp_path, capsys, city):
    pts = tmp_path / "pts.csv"
    pd.DataFrame({"lat": city.points[:, 0], "lon": city.points[:, 1]}).to_csv(pts, index=False)
    counts = tmp_path / "visits.txt"
    counts.write_text("\n".join(str(c) for c in range(city.n)) + "\n")
    code, o, e = _run(["curves", "--space", str(pts), "--metric", "haversine", "--mechanisms",
                       "exponential", "optimal", "--eps-tight", "2", "--prior",
                       f"counts:{counts}", "--privacy", "adversary-error", "--no-progress", "-o",
                       str(tmp_path / "out")], capsys)
    assert code == 0, e
    df = pd.read_csv(tmp_path / "out" / "curves.csv")
    assert {"expected_loss", "adversary_error", "remap_expected_loss"} <= set(df.columns)
    assert "optimal[expected]" in set(df.mechanism)
    assert "Prior: counts of visits.txt" in o
    assert (tmp_path / "out" / "curves.png").stat().st_size > 10_000
    assert "optimal attacker's error" in (tmp_path / "out" / "curves.md").read_text()


def test_cli_refuses_bad_priors_before_any_build(tmp_path, capsys, city):
    pts = tmp_path / "pts.csv"
    pd.DataFrame({"lat": city.points[:, 0], "lon": city.points[:, 1]}).to_csv(pts, index=False)
    bad = tmp_path / "p.txt"
    bad.write_text("\n".join(["0.5", "-0.5"] + ["0"] * (city.n - 2)) + "\n")
    code, o, e = _run(["curves", "--space", str(pts), "--metric", "haversine", "--eps-tight", "2",
                       "--prior", str(bad), "--no-progress", "-o", str(tmp_path / "o")], capsys)
    assert code == 2 and "p.txt" in e and "Traceback" not in e
    with pytest.raises(SystemExit) as exc:
        main(["curves", "--space", str(pts), "--privacy", "bayes", "-o", str(tmp_path / "o")])
    assert exc.value.code == 2 and "--privacy" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_explain_with_a_prior_states_the_attackers_error(tmp_path, capsys, city):
    f = mdp.build("exponential", city, 3.0).save(tmp_path / "m.npz")
    code, o, e = _run(["explain", str(f), "--prior", "uniform"], capsys)
    assert code == 0, e
    assert "an attacker who knows where your users usually are guesses within" in o
    code, o, e = _run(["explain", str(f), "--prior", "uniform", "--json"], capsys)
    rec = json.loads(o)["under_prior"]
    assert rec["adversary_error"] <= rec["expected_loss"]


def test_cli_build_with_the_expected_objective_and_a_prior(tmp_path, capsys, city):
    pts = tmp_path / "pts.csv"
    pd.DataFrame({"lat": city.points[:, 0], "lon": city.points[:, 1]}).to_csv(pts, index=False)
    counts = tmp_path / "visits.txt"
    counts.write_text("\n".join(str(3 * c % 7) for c in range(city.n)) + "\n")
    code, o, e = _run(["build", "--space", str(pts), "--mechanism", "optimal", "--epsilon", "2",
                       "--param", "objective=expected", "--prior", f"counts:{counts}", "-o",
                       str(tmp_path / "m.npz")], capsys)
    assert code == 0, e
    m = mdp.load(tmp_path / "m.npz")
    assert m.params["objective"] == "expected"
    # a prior with the default worst-case objective changes nothing: refused
    code, o, e = _run(["build", "--space", str(pts), "--mechanism", "optimal", "--epsilon", "2",
                       "--prior", f"counts:{counts}", "-o", str(tmp_path / "w.npz")], capsys)
    assert code == 2 and "objective='expected' only" in e


def test_curves_on_a_local_dask_cluster_equal_a_local_run(city, tmp_path):
    distributed = pytest.importorskip("distributed")
    prior = Prior.from_counts(np.arange(city.n))
    names = ["exponential", "optimal", "planar_laplace"]       # 14 points: OPTMech[expected] too
    local = loss_curves(city, names, [1.0, 3.0], progress=False, prior=prior)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        remote = loss_curves(city, names, [1.0, 3.0], progress=False, prior=prior,
                             scheduler=client, keep=tmp_path / "kept")
    cols = [c for c in local.columns if c not in ("seconds", "file")]
    pd.testing.assert_frame_equal(local[cols], remote[cols])
    assert len(list((tmp_path / "kept").glob("*.npz"))) == 8      # 3 families + expected, 2 targets


def test_an_unreachable_scheduler_is_a_clear_error(city):
    pytest.importorskip("distributed")
    with pytest.raises(mdp.ParameterError, match="scheduler"):
        loss_curves(city, ["exponential"], [1.0], progress=False,
                    scheduler="tcp://127.0.0.1:1")


def test_the_expected_variant_is_added_on_small_spaces_and_by_name_on_larger_ones():
    rng = np.random.default_rng(3)
    big = mdp.MetricSpace.from_points(np.c_[48.2 + rng.random(31) * 0.05,
                                            16.35 + rng.random(31) * 0.05], metric="haversine")
    prior = Prior.uniform(31)
    auto = loss_curves(big, ["optimal"], [4.0], progress=False, prior=prior)
    assert set(auto.mechanism) == {"optimal", "uniform", "lower_bound"}
    named = loss_curves(big, ["optimal[expected]"], [4.0], progress=False, prior=prior)
    assert "optimal[expected]" in set(named.mechanism)
    with pytest.raises(mdp.ParameterError, match="give one"):
        loss_curves(big, ["optimal[expected]"], [4.0], progress=False)
