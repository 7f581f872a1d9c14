"""planstack benchmarks: latency, accuracy and overhead measurements with reports."""
