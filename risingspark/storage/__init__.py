"""Hummock: the LSM tree of Parquet SSTs that stores every table, MV and operator state."""
