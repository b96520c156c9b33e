#!/usr/bin/env python3
"""The committed noise_study runs against the noise model as corrected on 2026-12-07.

The reports here were written by earlier builds, whose model (core/src/noise.cpp) counted the
decomposition's rounding at every blind-rotation step (n instead of the n/2 steps whose key
bit is 1; 2 (1 - 2^-u) per unrolled group instead of u) and took the decision boundaries at 0
and 1/2 (the rounding modulus switch puts them half a Z_2N step, 1/(4N), below). This script
recomputes the model-dependent figures of each report from its JSON: the measured statistics
are the run's own. The model here mirrors core/src/noise.cpp; at the reports' parameter sets
its V_BR, V_KS and V_MS equal noise_model()'s to the digits printed.

usage: python3 recompute_2026-12-07.py FILE.json...   (needs mpmath: pip install mpmath)
"""
import itertools
import json
import sys

import mpmath

mpmath.mp.dps = 50


def model(p, unroll):
    n, k, N = p["lwe_dimension"], p["glwe_dimension"], p["polynomial_size"]
    bg, l = p["bk_base_log"], p["bk_level_count"]
    kb, t = p["ks_base_log"], p["ks_level_count"]
    s_lwe, s_glwe = p["lwe_noise_stddev"], p["glwe_noise_stddev"]
    q, pr, Bg, base = 2.0 ** -(bg * l), 2.0 ** -(kb * t), 2.0**bg, 2.0**kb
    grouped = (n // unroll) * unroll if unroll > 1 else 0
    groups = grouped / unroll if unroll > 1 else 0
    key_terms = (n - grouped) + 2 * (2**unroll - 1) * groups
    rounding_terms = (n - grouped) * 0.5 + groups * 2 * (1 - 2.0**-unroll)
    v_br = (key_terms * (k + 1) * l * N * (Bg * Bg + 2) / 12 * s_glwe**2
            + rounding_terms * (1 + k * N / 2) * q * q / 12)
    v_ks = k * N * t * (1 - 1 / base) * s_lwe**2 + (k * N / 2) * pr * pr / 12
    return {"v_br": v_br, "v_ks": v_ks, "out": v_br + v_ks,
            "v_ms": (1 + n / 2) / (12 * (2 * N) ** 2),
            "bias": k * N * t * (base - 1) / base**2 * s_lwe**2, "half_step": 1 / (4 * N)}


def log2_tail(margin, variance):
    """log2 erfc(margin / sqrt(2 variance))."""
    x = mpmath.mpf(margin) / mpmath.sqrt(2 * mpmath.mpf(variance))
    return float(mpmath.log(mpmath.erfc(x), 2))


def averaged(parts, variance, h):
    """Probability per bootstrap averaged over inputs: one-sided tails at both boundaries,
    each moved by half a step, with the grid's own rounding (h^2/3) taken off the variance."""
    sd = mpmath.sqrt(2 * (mpmath.mpf(variance) - h * h / 3))
    total, cases = mpmath.mpf(0), 0
    for offset, weights in parts:
        for xs in itertools.product((-1, 1), repeat=len(weights)):
            e = (offset + sum(w * x for w, x in zip(weights, xs)) + 4) % 8 - 4
            e = 4 if e == -4 else e
            near, toward_zero = abs(e), (h if e > 0 else -h)
            total += (mpmath.erfc((near / 8 + toward_zero) / sd)
                      + mpmath.erfc(((4 - near) / 8 - toward_zero) / sd)) / 2
            cases += 1
    return total / cases


def main(files):
    for name in files:
        run = json.load(open(name))
        unroll = run.get("bootstrapping_key_unroll", 1)
        print(f"== {name}: unroll {unroll}, commit {run['commit']}")
        for s in run["sets"]:
            p, m = s["parameters"], model(s["parameters"], unroll)
            h = m["half_step"]
            old = s["model"]["bootstrapped_output"]
            print(f"{p['name']}: V_BR {m['v_br']:.4e} (report {s['model']['blind_rotation']:.4e}), "
                  f"V_out {m['out']:.4e} (report {old:.4e}), one key expects "
                  f"{(m['out'] - m['bias']) / m['out']:.3f} of V_out")
            out, dec = [], []
            for g in s["gates"]:
                bootstraps = 2 if g["kind"] == "MUX" else 1
                factor = 2 if g["kind"] == "MUX" else g["variance_factor"]
                if g["output"]["variance"]:
                    out.append(g["output"]["variance"] / (bootstraps * m["v_br"] + m["v_ks"]))
                model_dec = factor * m["out"] + m["v_ms"]
                if not g["stress"]:
                    dec.append(g["decision"]["variance"] / model_dec)
                measured = g["decision"]["variance"]
                margin = g["margin"] - h
                parts = ([(-1, [1, 1]), (-1, [-1, 1])] if g["kind"] == "MUX"
                         else [(g["offset_eighths"], g["weights"])])
                p_model = log2_tail(margin, model_dec - h * h / 3)
                p_measured = log2_tail(margin, measured - h * h / 3)
                line = (f"  {g['label']:16} log2 P worst input model {p_model:8.1f}"
                        f" measured {p_measured:8.1f}")
                if g["stress"]:
                    e_model = g["bootstraps"] * averaged(parts, model_dec, h)
                    e_measured = g["bootstraps"] * averaged(parts, measured, h)
                    line += (f"; expected failures model {mpmath.nstr(e_model, 3)}"
                             f" measured {mpmath.nstr(e_measured, 3)}"
                             f" counted {g['failure']['decision_failures']}")
                print(line)
            print(f"  output var / model {min(out):.2f}-{max(out):.2f}; "
                  f"decision var / model (non-stress) {min(dec):.2f}-{max(dec):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
