"""The run-time core: what happens around a training run, written once below the four doors.

- `loop.py`: the N-step loop (iterations_per_loop) and the server that answers fetches made with it.
- `units.py`: the run-time units (dumps, numeric checks, keep-dtype, host-kept regions, profiling, the fusion
  report) as session-run hooks (NPUSession, NPUEstimator), and `traced_with_units`, their form inside a traced
  function; `probes.py` builds dumps and checks into loop bodies and traced steps.
- `keras_calls.py`: a plan applied to one Keras fit / evaluate / predict call (PlanCallback), shared by the Keras
  door (NPUCallback) and the TF2 door (npu_device's as_default()).
- `doors.py`: what each door declares it carries out, narrowing a plan to it, and `enter_plan`.
- `dump.py`, `numeric.py`, `profiling.py`, `host_regions.py`, `fusion.py`, `graph.py`: the mechanisms.
"""
