"""Modules generated from proto/pricer/v1/ by scripts/python-protos.sh: do not edit."""
