"""maelab: a small, tested library behind the executable companion book on the theory of masked autoencoders."""
from ._util import resolve_device, seed_everything
from ._validate import ParameterError

__version__ = "0.1.0"
__all__ = ["ParameterError", "resolve_device", "seed_everything", "__version__"]
