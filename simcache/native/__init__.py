"""Build infrastructure: which modules are compiled with mypyc, and whether their compiled or
source versions run."""
