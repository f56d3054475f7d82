"""tkcheck: static verifier for asynchronous ThunderKittens / MegaKittens kernels."""
__version__ = "0.1.0"
