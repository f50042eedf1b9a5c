"""The run-time core: what happens around a training run, written once below the three doors.

- `loop.py`: the N-step loop (iterations_per_loop) and the server that answers fetches made with it.
- `units.py`: the run-time units (dumps, numeric checks, keep-dtype, host-kept regions, profiling) as session-run
  hooks, and their traced-function forms for Keras; `probes.py` builds dumps and checks into loop bodies and
  traced steps.
- `doors.py`: what each door declares it carries out, and `enter_plan`.
- `dump.py`, `numeric.py`, `profiling.py`, `host_regions.py`, `batchnorm.py`, `graph.py`: the mechanisms.
"""
