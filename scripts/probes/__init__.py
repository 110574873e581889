"""The probe's cases by category, collected by ``scripts/probe_runs.py``."""
