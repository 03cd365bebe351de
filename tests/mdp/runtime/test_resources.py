"""Memory checked before work: refused with the estimate and the limit, nothing allocated."""

from __future__ import annotations

import importlib
import os
import threading
import zipfile

import numpy as np
import pytest

import mdp
from mdp.cli.main import main
from mdp.errors import FileFormatError, ResourceLimitError
from mdp.runtime.resources import check_memory, distance_matrix_bytes, format_bytes, memory_limit
from mdp.spaces.specs import load_points_csv


def test_check_memory_states_estimate_and_limit():
    check_memory(10, "x", 10)
    with pytest.raises(ResourceLimitError, match=r"needs about 1 GiB.*limit of 1 MiB.*max_memory="):
        check_memory(1 << 30, "a thing", 1 << 20)
    with pytest.raises(mdp.errors.ParameterError, match="max_memory"):
        check_memory(1, "x", 0)
    assert isinstance(ResourceLimitError("m"), MemoryError)
    assert distance_matrix_bytes(20_000) == 4 * 20_000 ** 2 * 8 and format_bytes(2048) == "2 KiB"


def _big_csv(path, n):
    x = np.arange(n, dtype=float)
    np.savetxt(path, np.c_[x, x % 7], delimiter=",", fmt="%.1f")
    return path


def test_a_large_points_file_is_refused_before_its_distances(tmp_path):
    # 20,000 points: 12.8 GB of n x n arrays; numpy's MemoryError traceback came halfway through
    path = _big_csv(tmp_path / "big.csv", 20_000)
    with pytest.raises(ResourceLimitError, match="20,000 points needs about 11.9 GiB"):
        load_points_csv(path, max_memory=1 << 30)
    assert load_points_csv(_big_csv(tmp_path / "s.csv", 50), max_memory=1 << 30).n == 50


def test_mdp_build_on_a_huge_space_is_refused_with_a_message(tmp_path, capsys):
    path = _big_csv(tmp_path / "huge.csv", 300_000)          # 2.6 TiB of distances
    code = main(["build", "--space", str(path), "--mechanism", "optimal", "--epsilon", "1",
                 "-o", str(tmp_path / "m.npz")])
    err = capsys.readouterr().err
    assert code == 2 and "300,000 points needs about" in err and "Traceback" not in err
    assert not (tmp_path / "m.npz").exists()


def test_load_refuses_declared_sizes_above_the_limit_before_reading(tmp_path, monkeypatch):
    sp = mdp.MetricSpace.from_points(np.random.default_rng(0).uniform(size=(40, 2)))
    path = mdp.build("exponential", sp, 1.0).save(tmp_path / "m.npz")
    assert mdp.load(path, max_memory=1 << 30).space.n == 40

    def no_read(*args, **kwargs):
        raise AssertionError("an array was read")

    monkeypatch.setattr(zipfile.ZipFile, "read", no_read)
    with pytest.raises(ResourceLimitError, match=r"m\.npz: the mechanism file .*declare"):
        mdp.load(path, max_memory=50_000)


def test_load_refuses_a_small_file_declaring_a_huge_array(tmp_path):
    # a few kB of deflated zeros declaring a 4000 x 4000 distances array (128 MB)
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("distances.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False,
                                                      "shape": (4000, 4000)})
            zero = bytes(1 << 20)
            for _ in range(122):
                fh.write(zero)
    assert path.stat().st_size < 1 << 20
    with pytest.raises(ResourceLimitError, match="bomb.npz"):
        mdp.load(path, max_memory=100 << 20)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_load_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    result = {}

    def target():
        try:
            mdp.load(fifo)
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            result["exc"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():                      # unblock the reader so the test process can exit
        with open(fifo, "wb"):
            pass
        pytest.fail("mdp.load blocked on a FIFO")
    assert isinstance(result.get("exc"), FileFormatError)
    assert "not a regular file" in str(result["exc"])


def test_from_points_checks_memory_from_n_before_computing_distances():
    # 1M points asked numpy for 7.28 TiB; now the space is refused from n alone
    pts = np.zeros((1_000_000, 2))
    with pytest.raises(ResourceLimitError, match="1,000,000 points needs about 29.1 TiB"):
        mdp.MetricSpace.from_points(pts)
    with pytest.raises(ResourceLimitError, match="limit of 1 KiB"):
        mdp.MetricSpace.from_points(np.arange(40.0)[:, None], max_memory=1024)


# -- LP families: their peak memory estimated from n before any solve -----------------------------
@pytest.fixture(scope="module")
def space40():
    return mdp.MetricSpace.from_points(np.random.default_rng(3).uniform(size=(40, 2)))


@pytest.mark.parametrize("family, display", [("optimal", "OPTMech"), ("spanner", "SpannerMech"),
                                             ("constopt", "ConstOPTMech")])
def test_lp_families_refuse_above_max_memory_before_any_solve(space40, monkeypatch, inject,
                                                              family, display):
    import scipy.optimize

    from mdp.lp.highs import run_highs

    def no_solve(*args, **kwargs):
        raise AssertionError("a solver was called")

    inject(run_highs, no_solve)
    monkeypatch.setattr(scipy.optimize, "linprog", no_solve)
    # the family's build never starts: its plan is the first thing it computes
    monkeypatch.setattr(importlib.import_module(f"mdp.families.{family}.build"), "plan",
                        no_solve)
    with pytest.raises(ResourceLimitError, match=rf"{display} on n = 40 points needs about "
                                                 r"[0-9.]+ MiB of memory, above the limit of "
                                                 r"9.77 KiB \(max_memory=10000\)"):
        mdp.build(family, space40, 1.0, max_memory=10_000)


def test_lp_family_estimates_follow_the_plan():
    from mdp.families.constopt.plan import peak_bytes as constopt_bytes
    from mdp.families.optimal.plan import BUILD_COPIES, LAZY_ROWS_PER_ENTRY
    from mdp.families.optimal.plan import peak_bytes as optimal_bytes
    from mdp.runtime.resources import lp_bytes
    from mdp.worst_case.column_blocks import block_bytes
    n = 40
    base = distance_matrix_bytes(n, BUILD_COPIES)
    # the dualised full LP: n^2 (n - 1) privacy rows of 2 nonzeros, n loss rows
    rows = n * n * (n - 1)
    assert optimal_bytes(n, {"method": "full"}) == base + lp_bytes(rows + n, 2 * rows + n * n)
    lazy_rows = LAZY_ROWS_PER_ENTRY * n * n
    assert optimal_bytes(n, {"method": "lazy"}) == base + lp_bytes(lazy_rows, 2 * lazy_rows)
    # column blocks: n packed n x n inverses, 4 n^2 (n + 1) bytes, on top of the lazy finish
    assert block_bytes(n) == 4 * n * n * (n + 1)
    assert optimal_bytes(n, {"method": "blocks"}) == (base + lp_bytes(lazy_rows, 2 * lazy_rows)
                                                      + block_bytes(n))
    # the full LP grows as n^3, the Schur complement of ConstOPTMech as n^2
    assert optimal_bytes(200, {"method": "full"}) > 100 * optimal_bytes(40, {"method": "full"})
    assert 20 < constopt_bytes(400, {"r": 10}) / constopt_bytes(40, {"r": 10}) < 200


def test_default_lp_builds_pass_the_memory_check(space40):
    sp = mdp.MetricSpace.from_points(np.random.default_rng(4).uniform(size=(8, 2)))
    mech = mdp.build("optimal", sp, 1.0)
    assert mech.space.n == 8
    # a limit above the estimate builds the same mechanism
    big = mdp.build("optimal", sp, 1.0, max_memory=1 << 30)
    np.testing.assert_allclose(big.matrix, mech.matrix, atol=1e-9)
    with pytest.raises(ResourceLimitError, match="OPTMech on n = 8 points"):
        mdp.build("optimal", sp, 1.0, max_memory=1000)
    # families without an estimate are not affected
    assert mdp.build("exponential", space40, 1.0, max_memory=1000).space.n == 40


# -- --max-memory on the command line ----------------------------------------------------------
def test_parse_bytes_reads_units_and_refuses_bad_sizes():
    from mdp.runtime.resources import parse_bytes
    assert parse_bytes("8GB") == 8 * 10**9 and parse_bytes("8 gb") == 8 * 10**9
    assert parse_bytes("512MiB") == 512 * 2**20 and parse_bytes("1.5KiB") == 1536
    assert parse_bytes("2e9") == 2 * 10**9 and parse_bytes("100B") == 100
    assert parse_bytes("3TB") == 3 * 10**12 and parse_bytes("1GiB") == 2**30
    for bad in ("lots", "8XB", "-1GB", "0", "nan", "inf", "", "GB", "1e30TB"):
        with pytest.raises(mdp.errors.ParameterError, match="units: B, KB"):
            parse_bytes(bad)


def test_cli_max_memory_is_threaded_to_spaces_builds_and_loads(tmp_path, capsys):
    csv = _big_csv(tmp_path / "s.csv", 40)
    out = tmp_path / "m.npz"
    # the space's 40 x 40 arrays (51 KB) fit 1MB; OPTMech's LP (about 2 MiB) does not
    code = main(["build", "--space", str(csv), "--mechanism", "optimal", "--epsilon", "1",
                 "--max-memory", "1MB", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "OPTMech on n = 40 points needs about" in err
    assert "limit of 977 KiB" in err and "--max-memory" in err and "max_memory=" not in err
    assert not out.exists()
    code = main(["build", "--space", str(csv), "--mechanism", "optimal", "--epsilon", "1",
                 "--max-memory", "1KB", "-o", str(out)])
    assert code == 2 and "a metric space of 40 points needs" in capsys.readouterr().err
    assert main(["build", "--space", str(csv), "--mechanism", "exponential", "--epsilon", "1",
                 "--max-memory", "1GiB", "-o", str(out)]) == 0
    capsys.readouterr()
    for argv in (["eps", str(out)], ["privatize", str(out), "3"],
                 ["lower-bound", "--space", str(csv), "--epsilon", "1"],
                 ["curves", "--space", str(csv), "--mechanisms", "exponential", "--eps-tight",
                  "1", "-o", str(tmp_path / "c")]):
        code = main(argv + ["--max-memory", "100B"])
        err = capsys.readouterr().err
        assert code == 2 and "needs about" in err and "limit of 100 B" in err, (argv, err)
        assert main(argv + ["--max-memory", "1GB"]) == 0, argv
        capsys.readouterr()


def test_cli_max_memory_bad_value_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["build", "--space", "x.csv", "--mechanism", "optimal", "--epsilon", "1",
              "--max-memory", "lots", "-o", str(tmp_path / "m.npz")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--max-memory" in err and "'lots'" in err and "8GB" in err


def test_memory_limit_reaches_checks_that_cannot_take_it():
    """A scoped limit applies to every check without its own; an explicit one still wins."""
    check_memory(10**6, "work")
    with memory_limit(1000):
        with pytest.raises(ResourceLimitError, match="limit of 1000 B"):
            check_memory(10**6, "work")
        check_memory(10**6, "work", max_memory=10**7)
        with memory_limit(None):          # None keeps the enclosing limit
            with pytest.raises(ResourceLimitError):
                check_memory(2000, "work")
    check_memory(10**6, "work")           # the limit ends with its block
    with pytest.raises(mdp.errors.ParameterError, match="max_memory"):
        with memory_limit(0):
            pass


def test_max_memory_reaches_plugin_spaces_and_the_geo_commands(tmp_path, capsys):
    """glove:N builds its space inside the plugin; mdp map and mdp explain load files."""
    with pytest.raises(ResourceLimitError, match="200 points"):
        mdp.spaces.specs.load_space("glove:200:0", max_memory=10**5)
    assert mdp.spaces.specs.load_space("glove:200:0", max_memory=10**8).n == 200
    code = main(["lower-bound", "--space", "glove:200:0", "--epsilon", "1", "--max-memory", "100KB"])
    assert code == 2 and "200 points needs about" in capsys.readouterr().err
    pts = tmp_path / "city.csv"
    pts.write_text("lat,lon\n" + "\n".join(f"{48.85 + 0.01 * i},{2.35 + 0.013 * (i % 3)}"
                                           for i in range(8)) + "\n")
    mech = tmp_path / "m.npz"
    assert main(["build", "--space", str(pts), "--mechanism", "exponential", "--epsilon", "1",
                 "-o", str(mech)]) == 0
    capsys.readouterr()
    for argv in (["explain", str(mech)], ["map", str(mech), "--input", "48.86,2.36", "-o", str(tmp_path / "m.html")]):
        assert main(argv + ["--max-memory", "100B"]) == 2, argv
        assert "limit of 100 B" in capsys.readouterr().err, argv
        assert main(argv + ["--max-memory", "1GB"]) == 0, argv
        capsys.readouterr()
