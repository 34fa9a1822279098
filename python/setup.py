"""Installs the scr module into a Python environment: ``pip install .`` in this directory
(or add this directory to PYTHONPATH). The module loads libscr.so from the SCR install it
came with; set SCR_LIBRARY to use another."""
from setuptools import setup

setup(
    name="scr",
    version="0.1.0",
    description="SCR (Scalable Checkpoint/Restart) for mpi4py programs, over libscr",
    py_modules=["scr"],
    python_requires=">=3.8",
)
