"""The few `tensorflow.contrib` counterparts written here, one file per contrib module (see ../table.py)."""
