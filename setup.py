"""Packaging for npu_bridge_compat (metadata lives in pyproject.toml)."""

from setuptools import setup

setup()
