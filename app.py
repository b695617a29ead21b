"""Streamlit page: run a scenario from scenarios/ and show its latency table.

A minimal front door until the what-if UI issue lands; it holds no model
logic and calls the public API only. Run with ``streamlit run app.py``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import simcache

SCENARIOS = Path(__file__).parent / "scenarios"

st.set_page_config(page_title="simcache", layout="wide")
st.title("simcache: what latency will my VMs see?")
names = sorted(p.stem for p in SCENARIOS.glob("*.toml"))
choice = st.selectbox("Scenario", names, index=names.index("default") if "default" in names else 0)
seed = st.number_input("Seed", min_value=0, value=1, step=1)
duration = st.slider("Simulated seconds", min_value=2, max_value=60, value=10)
if st.button("Run", type="primary"):
    try:
        scenario = simcache.load_scenario(SCENARIOS / f"{choice}.toml")
    except simcache.ScenarioError as exc:
        st.error(str(exc))
        st.stop()
    bar = st.progress(0.0, text="simulating")
    result = simcache.simulate(scenario, seed=int(seed), duration=float(duration), progress=lambda f: bar.progress(min(f, 1.0)))
    bar.empty()
    st.subheader("Latency per VM group")
    st.dataframe(result.summary.round(3), hide_index=True)
    st.subheader("Where the write latency comes from (ms)")
    st.dataframe(result.breakdown.round(3), hide_index=True)
    name, utilization = result.bottleneck()
    st.write(f"Busiest component: **{name}** at {utilization:.0%} mean utilization.")
    st.line_chart(result.series[["write_p99_ms", "read_p99_ms"]])
