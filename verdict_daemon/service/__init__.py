"""The monitoring service: the cycle's steps, their order (cycle.py), the scheduler (daemon.py) and its jobs."""
