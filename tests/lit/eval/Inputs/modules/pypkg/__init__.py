# A namespace-extending package root (flash-linear-attention's fla/__init__.py): __path__ and globals() are
# Python's, which tilec does not model, so these statements are skipped with a warning, not errors.
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)


def _export(name, value):
    globals()[name] = value


_export("EXPORTED", 1)
