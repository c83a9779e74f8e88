"""Runnable example tool services and their manifests (see each package)."""
