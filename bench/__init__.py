"""Latency, throughput and memory benchmark of the callgate sidecar (`make bench`)."""
