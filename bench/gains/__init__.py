"""Helpers of the training-gains benchmark (bench/gains.py): model specs, preparation, measurement, report."""
