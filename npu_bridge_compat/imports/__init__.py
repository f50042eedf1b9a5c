"""The one engine that serves a ported program's imports: worlds (tables of `Module` rows) read by `World` and its
one finder (world.py), and the one hook of the program's own imports (program.py).

It sits in the bottom layer, over compat/'s versions and Keras helpers (compat/ never imports it), because a world
is needed below the doors: tensorflow-estimator 2.15 served on TensorFlow 2.16 and later (estimator_library.py),
which the Estimator door asks for. The other worlds (the adapter's import paths, TF 1.15, TF 2.6, the standalone
Keras 2.2, the ports' NumPy and Python) are legacy/'s; legacy/runs.py lists every world a run serves.
"""
